//! Transport features of the real server (`tavli_engine::service::serve_with_web` on
//! ephemeral loopback ports): TLS and mutual TLS with certificates generated here
//! (rcgen), gzip and zstd compression of requests and responses (the hand-mounted
//! `ListLegalPlays` route and the generated methods), and the analysis page with its
//! gRPC-Web endpoint (plain HTTP/1.1, as a browser speaks it); and the limits of
//! issue #11 with them: TLS handshakes within the connection limit and the handshake
//! timeout, compressed requests within the message limit, the page's connections
//! within theirs. Expected plays come from the rules core.

use std::net::SocketAddr;
use std::time::Duration;

use prost::Message as _;
use tavli_engine::rules::{self, position_id, Dice, Position, Side, Variant};
use tavli_engine::service::pb::tavli_engine_client::TavliEngineClient;
use tavli_engine::service::pb::{self, apply_play_request, evaluate_request};
use tavli_engine::service::tls::{server_tls_config, TlsArgs};
use tavli_engine::service::ServerConfig;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tonic::codec::CompressionEncoding;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Identity};
use tonic::Code;

mod common;
use common::{TestServer, PORTES_START};

// ------------------------------------------------------------------ harness

impl TestServer {
    /// A TLS channel to `localhost` (the name in the server certificate).
    async fn tls_channel(&self, tls: ClientTlsConfig) -> Result<Channel, tonic::transport::Error> {
        Channel::from_shared(format!("https://localhost:{}", self.grpc.port()))
            .unwrap()
            .tls_config(tls.domain_name("localhost"))?
            .connect_timeout(Duration::from_secs(5))
            .connect()
            .await
    }

    /// `tavli_connections_closed_total{listener="grpc",reason}` (0 when absent),
    /// once it has reached `want` or after 2 s.
    async fn grpc_closed(&self, reason: &str, want: u64) -> u64 {
        let series =
            format!("tavli_connections_closed_total{{listener=\"grpc\",reason=\"{reason}\"}} ");
        let mut n = 0;
        for _ in 0..40 {
            let (_, _, body) = http(self.metrics, "GET", "/metrics", &[], b"").await;
            let text = String::from_utf8(body).unwrap();
            n = text
                .lines()
                .find_map(|l| l.strip_prefix(&series))
                .map_or(0, |v| v.trim().parse().unwrap());
            if n >= want {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        n
    }
}

fn portes_start_plays(d1: u32, d2: u32) -> pb::ListLegalPlaysRequest {
    pb::ListLegalPlaysRequest {
        position: Some(pb::list_legal_plays_request::Position::PositionId(
            PORTES_START.into(),
        )),
        dice: Some(pb::Dice { die1: d1, die2: d2 }),
        ..Default::default()
    }
}

/// ApplyPlay of 8/5 6/5 with 3-1 at the Portes start (R4: makes the 5 point).
fn apply_8_5_6_5() -> pb::ApplyPlayRequest {
    pb::ApplyPlayRequest {
        position: Some(apply_play_request::Position::PositionId(
            PORTES_START.into(),
        )),
        dice: Some(pb::Dice { die1: 3, die2: 1 }),
        play: Some(apply_play_request::Play::Notation("8/5 6/5".into())),
    }
}

/// The position after [`apply_8_5_6_5`].
const AFTER_8_5_6_5: &str = "portes/b/24:2,13:5,8:2,6:4,5:2/1:2,12:5,17:3,19:5";

/// (notation, resulting Position ID) of every legal play, from the rules core.
fn core_plays(pos: &Position, d1: u8, d2: u8) -> Vec<(String, String)> {
    rules::legal_plays(pos, Dice::new(d1, d2).unwrap())
        .unwrap()
        .into_iter()
        .map(|p| (p.notation.into(), position_id::to_id(&p.position)))
        .collect()
}

fn answer_plays(resp: &pb::ListLegalPlaysResponse) -> Vec<(String, String)> {
    resp.plays
        .iter()
        .map(|p| {
            let id = p.position.as_ref().map_or("", |q| q.position_id.as_str());
            (p.notation.clone(), id.to_string())
        })
        .collect()
}

fn portes_start() -> Position {
    Position::start(Variant::Portes, Side::White)
}

// ------------------------------------------------------------------ TLS

/// PEM text of DER bytes (RFC 7468): base64 in lines of 64 between the labels.
fn pem(label: &str, der: &[u8]) -> String {
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::STANDARD.encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for line in b64.as_bytes().chunks(64) {
        out.push_str(std::str::from_utf8(line).unwrap());
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

/// A certificate authority made for one test, and certificates it signs.
struct TestCa {
    issuer: rcgen::CertifiedIssuer<'static, rcgen::KeyPair>,
}

/// A certificate and its private key, PEM.
struct Pem {
    cert: String,
    key: String,
}

impl TestCa {
    fn new(name: &str) -> TestCa {
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, name);
        params.key_usages = vec![
            rcgen::KeyUsagePurpose::KeyCertSign,
            rcgen::KeyUsagePurpose::CrlSign,
            rcgen::KeyUsagePurpose::DigitalSignature,
        ];
        let key = rcgen::KeyPair::generate().unwrap();
        TestCa {
            issuer: rcgen::CertifiedIssuer::self_signed(params, key).unwrap(),
        }
    }

    fn pem(&self) -> String {
        pem("CERTIFICATE", self.issuer.der())
    }

    /// A leaf certificate for `names` (DNS names or IP addresses), for a server
    /// (`server`) or a client.
    fn sign(&self, names: &[&str], server: bool) -> Pem {
        let names: Vec<String> = names.iter().map(|s| s.to_string()).collect();
        let mut params = rcgen::CertificateParams::new(names).unwrap();
        params.distinguished_name.push(
            rcgen::DnType::CommonName,
            if server {
                "tavli-engine"
            } else {
                "tavli-client"
            },
        );
        params.extended_key_usages = vec![if server {
            rcgen::ExtendedKeyUsagePurpose::ServerAuth
        } else {
            rcgen::ExtendedKeyUsagePurpose::ClientAuth
        }];
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        Pem {
            cert: pem("CERTIFICATE", cert.der()),
            key: pem("PRIVATE KEY", &key.serialize_der()),
        }
    }
}

fn tls_server_config(server: &Pem, client_ca: Option<&str>) -> ServerConfig {
    let tls = server_tls_config(
        server.cert.as_bytes(),
        server.key.as_bytes(),
        client_ca.map(str::as_bytes),
    )
    .unwrap();
    ServerConfig {
        tls: Some(tls),
        ..ServerConfig::default()
    }
}

/// Retries `tls_channel` while the server starts; the handshake result itself
/// (accepted or refused) is what the caller looks at.
async fn connect_tls(server: &TestServer, tls: ClientTlsConfig) -> Result<Channel, String> {
    let mut last = String::new();
    for _ in 0..50 {
        match server.tls_channel(tls.clone()).await {
            Ok(ch) => return Ok(ch),
            Err(e) => {
                last = format!("{e:?}");
                if !last.contains("Connection refused") {
                    return Err(last);
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Err(last)
}

/// TLS: a client that trusts the test CA lists the plays of the Portes start over
/// TLS, the same plays as the rules core; a plaintext client gets no answer.
#[tokio::test]
async fn tls_client_with_the_ca_gets_answers() {
    let ca = TestCa::new("tavli test CA");
    let server_pem = ca.sign(&["localhost", "127.0.0.1"], true);
    let server = TestServer::start_with_web(tls_server_config(&server_pem, None)).await;

    let tls = ClientTlsConfig::new().ca_certificate(Certificate::from_pem(ca.pem()));
    let ch = connect_tls(&server, tls).await.expect("TLS connect");
    let resp = TavliEngineClient::new(ch)
        .list_legal_plays(portes_start_plays(3, 1))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(answer_plays(&resp), core_plays(&portes_start(), 3, 1));
    assert_eq!(resp.plays.len(), 16);

    // Plaintext HTTP/2 to a TLS port: the server reads it as a bad handshake.
    let plain = Channel::from_shared(format!("http://{}", server.grpc))
        .unwrap()
        .connect()
        .await;
    if let Ok(ch) = plain {
        let err = TavliEngineClient::new(ch)
            .list_legal_plays(portes_start_plays(3, 1))
            .await
            .unwrap_err();
        assert_eq!(
            (err.code(), err.message()),
            (Code::Unknown, "transport error"),
            "{err:?}"
        );
    }
    // That failed handshake is counted.
    assert_eq!(server.grpc_closed("tls_handshake", 1).await, 1);
    server.shutdown().await.unwrap();
}

/// A TLS server (a certificate for `localhost` signed by `ca`) whose connections
/// get their GOAWAY after `age_ms` (±10 %) and are closed `grace` seconds later.
async fn aged_tls_server(ca: &TestCa, age_ms: u64, grace: f64) -> TestServer {
    let server_pem = ca.sign(&["localhost"], true);
    TestServer::start(ServerConfig {
        max_connection_age: Some(Duration::from_millis(age_ms)),
        max_connection_age_grace: Some(Duration::from_secs_f64(grace)),
        ..tls_server_config(&server_pem, None)
    })
    .await
}

/// TLS and the connection age: TLS connections get their GOAWAY at the age too
/// (counted `max_age`, closed once their calls have ended), and a TLS client calling
/// all along reconnects (a new handshake); every call that reached the server was
/// answered (`common::call_across_ages`).
#[tokio::test]
async fn tls_connections_age_out_and_clients_reconnect() {
    let ca = TestCa::new("tavli test CA");
    let server = aged_tls_server(&ca, 400, 1.0).await;
    let tls = ClientTlsConfig::new().ca_certificate(Certificate::from_pem(ca.pem()));
    let c = TavliEngineClient::new(connect_tls(&server, tls).await.expect("TLS connect"));
    let (answered, _) = common::call_across_ages(Duration::from_millis(1500), || {
        let mut c = c.clone();
        async move {
            let resp = c.list_legal_plays(portes_start_plays(3, 1)).await?;
            assert_eq!(resp.into_inner().plays.len(), 16);
            Ok(())
        }
    })
    .await;
    let text = server.metrics_text().await;
    let ok = "grpc_server_handled_total{grpc_code=\"OK\",grpc_method=\"ListLegalPlays\",grpc_service=\"tavli.v1.TavliEngine\"}";
    assert_eq!(common::sample(&text, ok), Some(answered as f64));
    // 1.5 s at 0.36..0.44 s per connection: at least 3 aged out.
    assert!(server.grpc_closed("max_age", 3).await >= 3);
    assert_eq!(server.grpc_closed("max_age_grace", 0).await, 0);
    server.shutdown().await.unwrap();
}

/// The lingering close with TLS (docs/deploy.md, "Connection age"): a connection
/// that ends at its age sends its `close_notify` and shuts its write side, and the
/// server still reads what the client sends after that, instead of answering it with
/// a TCP reset; the connection is gone once the client closes.
#[tokio::test]
async fn tls_connections_linger_after_their_end() {
    use tokio_rustls::rustls;
    let ca = TestCa::new("tavli test CA");
    let server = aged_tls_server(&ca, 300, 5.0).await;
    let mut roots = rustls::RootCertStore::empty();
    roots.add(ca.issuer.der().clone()).unwrap();
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"h2".to_vec()];
    let connector = tokio_rustls::TlsConnector::from(std::sync::Arc::new(config));
    let tcp = tokio::net::TcpStream::connect(server.grpc).await.unwrap();
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let mut tls = connector.connect(name, tcp).await.unwrap();
    let kinds = tokio::time::timeout(Duration::from_secs(3), common::idle_h2_client(&mut tls))
        .await
        .expect("the connection ends at its age")
        .unwrap();
    assert!(kinds.contains(&7), "a GOAWAY among the frames {kinds:?}");
    common::server_still_reads(&mut tls)
        .await
        .expect("the server still reads after the end");
    tls.shutdown().await.unwrap();
    let gauge = "tavli_connections{listener=\"grpc\"}";
    let mut open = None;
    for _ in 0..30 {
        open = common::sample(&server.metrics_text().await, gauge);
        if open == Some(0.0) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        open,
        Some(0.0),
        "the connection is gone once the client closed"
    );
    assert_eq!(server.grpc_closed("max_age", 1).await, 1);
    server.shutdown().await.unwrap();
}

/// TLS: a client that trusts another CA refuses the server's certificate.
#[tokio::test]
async fn tls_client_with_another_ca_refuses_the_server() {
    let ca = TestCa::new("tavli test CA");
    let other = TestCa::new("some other CA");
    let server_pem = ca.sign(&["localhost"], true);
    let server = TestServer::start_with_web(tls_server_config(&server_pem, None)).await;
    let tls = ClientTlsConfig::new().ca_certificate(Certificate::from_pem(other.pem()));
    let err = connect_tls(&server, tls).await.unwrap_err();
    assert!(err.contains("UnknownIssuer"), "{err}");
    server.shutdown().await.unwrap();
}

/// Mutual TLS: a client with a certificate signed by the client CA gets answers;
/// one without a certificate, or with one from another CA, is refused before any
/// RPC is served.
#[tokio::test]
async fn mutual_tls_accepts_only_clients_signed_by_the_client_ca() {
    let server_ca = TestCa::new("tavli server CA");
    let client_ca = TestCa::new("tavli client CA");
    let server_pem = server_ca.sign(&["localhost", "127.0.0.1"], true);
    let server =
        TestServer::start_with_web(tls_server_config(&server_pem, Some(&client_ca.pem()))).await;
    let trust = || ClientTlsConfig::new().ca_certificate(Certificate::from_pem(server_ca.pem()));

    // Signed by the client CA: served, over TLS with a client certificate.
    let client_pem = client_ca.sign(&["tavli-client"], false);
    let ch = connect_tls(
        &server,
        trust().identity(Identity::from_pem(&client_pem.cert, &client_pem.key)),
    )
    .await
    .expect("mTLS connect");
    let mut c = TavliEngineClient::new(ch);
    let resp = c
        .list_legal_plays(portes_start_plays(6, 5))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(answer_plays(&resp), core_plays(&portes_start(), 6, 5));
    let applied = c.apply_play(apply_8_5_6_5()).await.unwrap().into_inner();
    assert_eq!(applied.position.unwrap().position_id, AFTER_8_5_6_5);

    // No client certificate, or one from a CA the server does not trust: the
    // server ends the handshake with a TLS alert, before any RPC.
    let stranger = TestCa::new("stranger CA").sign(&["tavli-client"], false);
    for (tls, alert) in [
        (trust(), "received fatal alert: CertificateRequired"),
        (
            trust().identity(Identity::from_pem(&stranger.cert, &stranger.key)),
            "received fatal alert: UnknownCA",
        ),
    ] {
        // With TLS 1.3 the client finishes its side of the handshake before the
        // server's verdict arrives, so the alert comes with the first RPC.
        let error = match connect_tls(&server, tls).await {
            Err(e) => e,
            Ok(ch) => {
                let err = TavliEngineClient::new(ch)
                    .list_legal_plays(portes_start_plays(6, 5))
                    .await
                    .unwrap_err();
                assert_eq!(err.code(), Code::Unknown, "{err:?}");
                format!("{err:?}")
            }
        };
        assert!(error.contains(alert), "{alert}: {error}");
    }
    // Both refusals are counted as failed handshakes.
    assert_eq!(server.grpc_closed("tls_handshake", 2).await, 2);
    // The refusals left the server serving its clients.
    let resp = c
        .list_legal_plays(portes_start_plays(3, 1))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(answer_plays(&resp), core_plays(&portes_start(), 3, 1));
    server.shutdown().await.unwrap();
}

/// The TLS flags' errors name the flag, the file and the reason.
#[test]
fn tls_flags_report_bad_files() {
    let dir = std::env::temp_dir().join(format!("tavli-tls-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ca = TestCa::new("tavli test CA");
    let pem = ca.sign(&["localhost"], true);
    let cert = dir.join("server.pem");
    let key = dir.join("server.key");
    let garbage = dir.join("garbage.pem");
    std::fs::write(&cert, &pem.cert).unwrap();
    std::fs::write(&key, &pem.key).unwrap();
    std::fs::write(&garbage, "not a certificate\n").unwrap();
    let missing = dir.join("missing.pem");

    let args = |c: &std::path::Path, k: &std::path::Path, ca: Option<&std::path::Path>| TlsArgs {
        tls_cert: Some(c.to_path_buf()),
        tls_key: Some(k.to_path_buf()),
        tls_client_ca: ca.map(|p| p.to_path_buf()),
    };
    assert!(
        TlsArgs::default().load().unwrap().is_none(),
        "no flags: plaintext"
    );
    assert!(args(&cert, &key, None).load().unwrap().is_some());

    let e = args(&missing, &key, None).load().unwrap_err();
    assert_eq!(
        e,
        format!(
            "--tls-cert {}: No such file or directory (os error 2)",
            missing.display()
        )
    );
    let e = args(&garbage, &key, None).load().unwrap_err();
    assert_eq!(
        e,
        format!(
            "TLS set-up with --tls-cert {}, --tls-key {}: the certificate file has no PEM certificate",
            garbage.display(),
            key.display()
        )
    );
    let e = args(&cert, &key, Some(&garbage)).load().unwrap_err();
    assert_eq!(
        e,
        format!(
            "TLS set-up with --tls-cert {}, --tls-key {}, --tls-client-ca {}: the client CA file has no PEM certificate",
            cert.display(),
            key.display(),
            garbage.display()
        )
    );
    // A key that is not PEM: refused by rustls when the configuration is built.
    let e = args(&cert, &garbage, None).load().unwrap_err();
    assert!(
        e.starts_with(&format!(
            "TLS set-up with --tls-cert {}, --tls-key {}: ",
            cert.display(),
            garbage.display()
        )) && e.len() > 60,
        "{e}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

// ------------------------------------------------------------------ compression

/// With `compress_responses`, gzip and zstd requests are accepted on the
/// hand-mounted ListLegalPlays route and on generated methods; responses come back
/// compressed with the encoding the client accepts, and carry the same plays as an
/// uncompressed call.
#[tokio::test]
async fn compressed_requests_and_responses() {
    let server = TestServer::start_with_web(ServerConfig {
        compress_responses: true,
        ..ServerConfig::default()
    })
    .await;
    let ch = server.channel().await;
    let plain = TavliEngineClient::new(ch.clone())
        .list_legal_plays(portes_start_plays(6, 5))
        .await
        .unwrap();
    assert!(plain.metadata().get("grpc-encoding").is_none());
    let want = core_plays(&portes_start(), 6, 5);
    assert_eq!(answer_plays(plain.get_ref()), want);

    for encoding in [CompressionEncoding::Gzip, CompressionEncoding::Zstd] {
        let name = match encoding {
            CompressionEncoding::Gzip => "gzip",
            _ => "zstd",
        };
        let mut c = TavliEngineClient::new(ch.clone())
            .send_compressed(encoding)
            .accept_compressed(encoding);
        let resp = c.list_legal_plays(portes_start_plays(6, 5)).await.unwrap();
        assert_eq!(resp.metadata().get("grpc-encoding").unwrap(), name);
        assert_eq!(answer_plays(resp.get_ref()), want, "{name}");

        // A generated method: ApplyPlay (R4: 8/5 6/5 makes the 5 point).
        let applied = c.apply_play(apply_8_5_6_5()).await.unwrap();
        assert_eq!(applied.metadata().get("grpc-encoding").unwrap(), name);
        assert_eq!(
            applied.into_inner().position.unwrap().position_id,
            AFTER_8_5_6_5
        );
    }

    // A compressed request with an uncompressed answer (the client does not accept
    // compression).
    let resp = TavliEngineClient::new(ch)
        .send_compressed(CompressionEncoding::Gzip)
        .list_legal_plays(portes_start_plays(6, 5))
        .await
        .unwrap();
    assert!(resp.metadata().get("grpc-encoding").is_none());
    assert_eq!(answer_plays(resp.get_ref()), want);
    server.shutdown().await.unwrap();
}

/// A request compressed with an encoding the server does not offer is answered
/// UNIMPLEMENTED with the encodings it accepts in `grpc-accept-encoding`, on the
/// hand-mounted route and on generated methods.
#[tokio::test]
async fn unknown_request_encoding_is_unimplemented() {
    let server = TestServer::start_with_web(ServerConfig::default()).await;
    let mut c = TavliEngineClient::new(server.channel().await);
    let mut req = tonic::Request::new(portes_start_plays(6, 5));
    req.metadata_mut()
        .insert("grpc-encoding", "deflate".parse().unwrap());
    let err = c.list_legal_plays(req).await.unwrap_err();
    assert_eq!(err.code(), Code::Unimplemented);
    assert_eq!(
        err.message(),
        "Content is compressed with `deflate` which isn't supported"
    );
    assert_eq!(
        err.metadata().get("grpc-accept-encoding").unwrap(),
        "gzip,zstd,identity"
    );
    let mut req = tonic::Request::new(pb::GetStartingPositionRequest {
        variant: pb::Variant::Fevga as i32,
        side_to_move: 0,
    });
    req.metadata_mut()
        .insert("grpc-encoding", "br".parse().unwrap());
    let err = c.get_starting_position(req).await.unwrap_err();
    assert_eq!(err.code(), Code::Unimplemented);
    assert_eq!(
        err.metadata().get("grpc-accept-encoding").unwrap(),
        "gzip,zstd,identity"
    );
    server.shutdown().await.unwrap();
}

/// By default (`compress_responses: false`) a client that accepts gzip gets plain
/// answers; its gzip and zstd requests are accepted.
#[tokio::test]
async fn responses_uncompressed_by_default() {
    let server = TestServer::start_with_web(ServerConfig::default()).await;
    let ch = server.channel().await;
    for encoding in [CompressionEncoding::Gzip, CompressionEncoding::Zstd] {
        let mut c = TavliEngineClient::new(ch.clone())
            .send_compressed(encoding)
            .accept_compressed(encoding);
        let resp = c.list_legal_plays(portes_start_plays(6, 5)).await.unwrap();
        assert!(resp.metadata().get("grpc-encoding").is_none());
        assert_eq!(
            answer_plays(resp.get_ref()),
            core_plays(&portes_start(), 6, 5)
        );
    }
    server.shutdown().await.unwrap();
}

// ------------------------------------------------------------------ web page

/// One HTTP/1.1 request on a fresh connection (`Connection: close`): the status
/// line, the headers (lower-case names) and the body (chunked encoding undone).
async fn http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> (String, Vec<(String, String)>, Vec<u8>) {
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut req = format!("{method} {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    s.write_all(req.as_bytes()).await.unwrap();
    s.write_all(body).await.unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).await.unwrap();
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let head = String::from_utf8(raw[..split].to_vec()).unwrap();
    let mut rest = &raw[split + 4..];
    let mut lines = head.split("\r\n");
    let status = lines.next().unwrap().to_string();
    let headers: Vec<(String, String)> = lines
        .map(|l| {
            let (k, v) = l.split_once(':').unwrap();
            (k.trim().to_ascii_lowercase(), v.trim().to_string())
        })
        .collect();
    let chunked = headers
        .iter()
        .any(|(k, v)| k == "transfer-encoding" && v == "chunked");
    let body = if chunked {
        let mut out = Vec::new();
        loop {
            let end = rest.windows(2).position(|w| w == b"\r\n").unwrap();
            let size =
                usize::from_str_radix(std::str::from_utf8(&rest[..end]).unwrap(), 16).unwrap();
            rest = &rest[end + 2..];
            if size == 0 {
                break;
            }
            out.extend_from_slice(&rest[..size]);
            rest = &rest[size + 2..];
        }
        out
    } else {
        rest.to_vec()
    };
    (status, headers, body)
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// A gRPC-Web call over HTTP/1.1: the message frame of the answer and the trailers
/// (`grpc-status`, `grpc-message`; from the headers for a trailers-only answer).
async fn grpc_web(
    addr: SocketAddr,
    method: &str,
    msg: &impl prost::Message,
) -> (Option<Vec<u8>>, String) {
    grpc_web_bytes(addr, method, &msg.encode_to_vec()).await
}

/// [`grpc_web`] with the request message's bytes as given.
async fn grpc_web_bytes(addr: SocketAddr, method: &str, bytes: &[u8]) -> (Option<Vec<u8>>, String) {
    let mut body = vec![0u8];
    body.extend_from_slice(&(bytes.len() as u32).to_be_bytes());
    body.extend_from_slice(bytes);
    let (status, headers, answer) = http(
        addr,
        "POST",
        &format!("/tavli.v1.TavliEngine/{method}"),
        &[
            ("content-type", "application/grpc-web+proto"),
            ("x-grpc-web", "1"),
        ],
        &body,
    )
    .await;
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert_eq!(
        header(&headers, "content-type"),
        Some("application/grpc-web+proto")
    );
    let mut trailers = String::new();
    for name in ["grpc-status", "grpc-message"] {
        if let Some(v) = header(&headers, name) {
            trailers.push_str(&format!("{name}:{v}\r\n"));
        }
    }
    let (mut message, mut i) = (None, 0);
    while i + 5 <= answer.len() {
        let len = u32::from_be_bytes(answer[i + 1..i + 5].try_into().unwrap()) as usize;
        let frame = &answer[i + 5..i + 5 + len];
        if answer[i] & 0x80 != 0 {
            trailers.push_str(std::str::from_utf8(frame).unwrap());
        } else {
            message = Some(frame.to_vec());
        }
        i += 5 + len;
    }
    assert_eq!(i, answer.len(), "whole frames");
    (message, trailers)
}

/// The page and its files are served from the binary, with a content security
/// policy that allows nothing but the page's own origin.
#[tokio::test]
async fn web_page_is_served() {
    let server = TestServer::start_with_web(ServerConfig::default()).await;
    let (status, headers, body) = http(server.web(), "GET", "/", &[], b"").await;
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert_eq!(
        header(&headers, "content-type"),
        Some("text/html; charset=utf-8")
    );
    assert!(header(&headers, "content-security-policy")
        .unwrap()
        .starts_with("default-src 'none'; script-src 'self';"));
    let html = String::from_utf8(body).unwrap();
    assert_eq!(html, include_str!("../web/index.html"));
    for (path, file, kind) in [
        (
            "/app.js",
            include_str!("../web/app.js"),
            "text/javascript; charset=utf-8",
        ),
        (
            "/board.js",
            include_str!("../web/board.js"),
            "text/javascript; charset=utf-8",
        ),
        (
            "/grpcweb.js",
            include_str!("../web/grpcweb.js"),
            "text/javascript; charset=utf-8",
        ),
        (
            "/style.css",
            include_str!("../web/style.css"),
            "text/css; charset=utf-8",
        ),
    ] {
        let (status, headers, body) = http(server.web(), "GET", path, &[], b"").await;
        assert_eq!(status, "HTTP/1.1 200 OK", "{path}");
        assert_eq!(header(&headers, "content-type"), Some(kind), "{path}");
        assert_eq!(body, file.as_bytes(), "{path}");
    }
    let (status, _, _) = http(server.web(), "GET", "/nothing-here", &[], b"").await;
    assert_eq!(status, "HTTP/1.1 404 Not Found");
    let (status, headers, _) = http(server.web(), "POST", "/", &[], b"x").await;
    assert_eq!(status, "HTTP/1.1 405 Method Not Allowed");
    assert_eq!(header(&headers, "allow"), Some("GET, HEAD"));
    server.shutdown().await.unwrap();
}

/// The page's gRPC-Web calls and the gRPC port share one concurrency limit: with
/// `concurrency_limit: 1` and a long 2-ply `Evaluate` running over gRPC, a gRPC-Web
/// call is refused `RESOURCE_EXHAUSTED` by the same admission, and served once the
/// search has been cancelled.
#[tokio::test]
async fn grpc_web_calls_share_the_concurrency_limit() {
    let server = TestServer::start_with_web(ServerConfig {
        concurrency_limit: 1,
        evaluator: Some(std::sync::Arc::new(
            tavli_engine::eval::engine::Engine::load_default(),
        )),
        ..ServerConfig::default()
    })
    .await;
    // White spread one checker a point, 3-3: 1896 plays to rank at 2 plies.
    const SPREAD: &str =
        "portes/w/24:1,23:1,22:1,21:1,20:1,19:1,18:1,17:1,16:1,15:1,14:1,13:1,11:1,10:1,9:1/1:15";
    let mut c = TavliEngineClient::new(server.channel().await);
    let long = tokio::spawn(async move {
        c.evaluate(pb::EvaluateRequest {
            match_state: None,
            position: Some(evaluate_request::Position::PositionId(SPREAD.into())),
            dice: Some(pb::Dice { die1: 3, die2: 3 }),
            plies: 2,
            grade: None,
        })
        .await
    });
    // Until the search holds the permit (it lasts a few hundred ms), the page's call is
    // served; then it is refused. Polled, not a fixed sleep: a faster evaluator
    // shortens the search (it ended inside a 300 ms sleep once the v2 features got
    // cheaper).
    let mut refused = None;
    for _ in 0..200 {
        assert!(!long.is_finished(), "the 2-ply search ended too soon");
        let (msg, trailers) =
            grpc_web(server.web(), "ListLegalPlays", &portes_start_plays(3, 1)).await;
        if msg.is_none() {
            refused = Some(trailers);
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(
        refused.as_deref().unwrap_or("never refused"),
        "grpc-status:8\r\ngrpc-message:server%20overloaded:%201%20requests%20already%20in%20flight;%20retry%20later\r\n"
    );
    // The client gives up: the search is cancelled and its permit returns.
    long.abort();
    let mut served = false;
    for _ in 0..50 {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let (msg, trailers) =
            grpc_web(server.web(), "ListLegalPlays", &portes_start_plays(3, 1)).await;
        if trailers == "grpc-status:0\r\n" {
            let resp = pb::ListLegalPlaysResponse::decode(msg.unwrap().as_slice()).unwrap();
            assert_eq!(answer_plays(&resp), core_plays(&portes_start(), 3, 1));
            served = true;
            break;
        }
    }
    assert!(served, "the permit did not come back after the cancel");
    server.shutdown().await.unwrap();
}

/// gRPC-Web over HTTP/1.1 (what the page sends): ListLegalPlays answers the plays of
/// the rules core, Evaluate ranks them, ApplyPlay applies one, and an invalid
/// request comes back as INVALID_ARGUMENT with the field in the message.
#[tokio::test]
async fn grpc_web_calls() {
    let server = TestServer::start_with_web(ServerConfig {
        evaluator: Some(std::sync::Arc::new(
            tavli_engine::eval::engine::Engine::load_default(),
        )),
        ..ServerConfig::default()
    })
    .await;

    let (msg, trailers) = grpc_web(server.web(), "ListLegalPlays", &portes_start_plays(3, 1)).await;
    assert_eq!(trailers, "grpc-status:0\r\n");
    let resp = pb::ListLegalPlaysResponse::decode(msg.unwrap().as_slice()).unwrap();
    assert_eq!(answer_plays(&resp), core_plays(&portes_start(), 3, 1));

    let (msg, trailers) = grpc_web(
        server.web(),
        "Evaluate",
        &pb::EvaluateRequest {
            match_state: None,
            position: Some(evaluate_request::Position::PositionId(PORTES_START.into())),
            dice: Some(pb::Dice { die1: 3, die2: 1 }),
            plies: 0,
            grade: None,
        },
    )
    .await;
    assert_eq!(trailers, "grpc-status:0\r\n");
    let eval = pb::EvaluateResponse::decode(msg.unwrap().as_slice()).unwrap();
    let mut ranked: Vec<String> = eval
        .ranked_plays
        .iter()
        .map(|r| r.play.as_ref().unwrap().notation.clone())
        .collect();
    ranked.sort();
    let mut all: Vec<String> = core_plays(&portes_start(), 3, 1)
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    all.sort();
    assert_eq!(ranked, all);
    assert!(eval
        .ranked_plays
        .windows(2)
        .all(|w| w[0].equity >= w[1].equity));

    let (msg, trailers) = grpc_web(server.web(), "ApplyPlay", &apply_8_5_6_5()).await;
    assert_eq!(trailers, "grpc-status:0\r\n");
    let applied = pb::ApplyPlayResponse::decode(msg.unwrap().as_slice()).unwrap();
    assert_eq!(applied.position.unwrap().position_id, AFTER_8_5_6_5);

    let (msg, trailers) = grpc_web(server.web(), "ListLegalPlays", &portes_start_plays(7, 1)).await;
    assert!(msg.is_none());
    // grpc-message is percent-encoded (gRPC over HTTP/2, "Responses").
    assert_eq!(
        trailers,
        "grpc-status:3\r\ngrpc-message:dice.die1:%20die%20must%20be%201..6,%20got%207\r\n"
    );
    server.shutdown().await.unwrap();
}

/// Request bytes that do not parse (a message cut short) are answered `INTERNAL` with
/// prost's reason, on the hand-mounted `ListLegalPlays` route (its own decoder) as on
/// a generated method (tonic's prost decoder).
#[tokio::test]
async fn unparsable_requests_are_internal_errors() {
    let server = TestServer::start_with_web(ServerConfig::default()).await;
    let plays = portes_start_plays(6, 5).encode_to_vec();
    let apply = apply_8_5_6_5().encode_to_vec();
    for (method, bytes, reason) in [
        (
            "ListLegalPlays",
            &plays,
            pb::ListLegalPlaysRequest::decode(&plays[..plays.len() - 1]).unwrap_err(),
        ),
        (
            "ApplyPlay",
            &apply,
            pb::ApplyPlayRequest::decode(&apply[..apply.len() - 1]).unwrap_err(),
        ),
    ] {
        let (msg, trailers) = grpc_web_bytes(server.web(), method, &bytes[..bytes.len() - 1]).await;
        assert!(msg.is_none(), "{method}");
        // grpc-message is percent-encoded (gRPC over HTTP/2, "Responses").
        let encoded: String = reason
            .to_string()
            .bytes()
            .map(|b| match b {
                b' '..=b'~' if b != b' ' && b != b'%' => (b as char).to_string(),
                _ => format!("%{b:02X}"),
            })
            .collect();
        assert_eq!(
            trailers,
            format!("grpc-status:13\r\ngrpc-message:{encoded}\r\n"),
            "{method}"
        );
    }
    server.shutdown().await.unwrap();
}

/// The page's connections have the limits of the other ports (served by the same
/// accept loop): at `web_max_connections` a new connection closes the one that has
/// sent nothing for longest and is served at once; a connection that sends nothing
/// is closed after the handshake timeout, one kept alive after a request after
/// `web_idle_timeout` (here the longer of the two: hyper's own header timer must
/// not close it sooner).
#[tokio::test]
async fn web_connections_are_bounded() {
    use std::time::Instant;
    use tokio::net::TcpStream;
    let server = TestServer::start_with_web(ServerConfig {
        web_max_connections: 2,
        web_idle_timeout: Duration::from_millis(1500),
        handshake_timeout: Duration::from_millis(600),
        ..ServerConfig::default()
    })
    .await;
    let addr = server.web();
    let mut buf = [0u8; 64];

    // Two silent connections take both places.
    let mut first = TcpStream::connect(addr).await.unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    let mut second = TcpStream::connect(addr).await.unwrap();
    let second_opened = Instant::now();
    tokio::time::sleep(Duration::from_millis(100)).await;
    // A third is served at once; the oldest silent one is closed for it (EOF).
    let mut third = TcpStream::connect(addr).await.unwrap();
    third
        .write_all(b"GET /style.css HTTP/1.1\r\nHost: t\r\n\r\n")
        .await
        .unwrap();
    let n = tokio::time::timeout(Duration::from_millis(500), third.read(&mut buf))
        .await
        .expect("the third connection was not served")
        .unwrap();
    assert!(buf[..n].starts_with(b"HTTP/1.1 200 OK\r\n"));
    let answered = Instant::now();
    let n = tokio::time::timeout(Duration::from_millis(500), first.read(&mut buf))
        .await
        .expect("the oldest silent connection stayed open")
        .unwrap();
    assert_eq!(n, 0);

    // The second, silent, is closed after the handshake timeout (0.6 s).
    let n = tokio::time::timeout(Duration::from_secs(3), second.read(&mut buf))
        .await
        .expect("a silent connection stayed open")
        .unwrap();
    assert_eq!(n, 0);
    let silent = second_opened.elapsed();
    assert!(
        silent >= Duration::from_millis(500) && silent < Duration::from_millis(1400),
        "{silent:?}"
    );
    // The third, kept alive and idle, after the idle timeout (1.5 s).
    let mut rest = Vec::new();
    tokio::time::timeout(Duration::from_secs(4), third.read_to_end(&mut rest))
        .await
        .expect("an idle connection stayed open")
        .unwrap();
    let idle = answered.elapsed();
    assert!(
        idle >= Duration::from_millis(1300) && idle < Duration::from_millis(2800),
        "{idle:?}"
    );
    server.shutdown().await.unwrap();
}

// ------------------------------------------------------------------ limits with TLS and compression

/// A TLS connection is bounded as a plaintext one: counted by the connection limit
/// from its accept, closed when it has not finished its TLS handshake and sent the
/// HTTP/2 preface within the handshake timeout, and the first to be closed when the
/// limit needs room.
#[tokio::test]
async fn tls_handshakes_are_bounded_by_the_connection_limits() {
    use tokio::net::TcpStream;
    let ca = TestCa::new("tavli test CA");
    let server_pem = ca.sign(&["localhost"], true);
    let server = TestServer::start_with_web(ServerConfig {
        max_connections: 2,
        handshake_timeout: Duration::from_millis(800),
        ..tls_server_config(&server_pem, None)
    })
    .await;
    let mut buf = [0u8; 16];

    // A connection that never starts its handshake is closed after the timeout.
    let mut silent = TcpStream::connect(server.grpc).await.unwrap();
    let t = std::time::Instant::now();
    let n = tokio::time::timeout(Duration::from_secs(3), silent.read(&mut buf))
        .await
        .expect("a connection without a TLS handshake stayed open")
        .unwrap_or(0);
    assert_eq!(n, 0);
    assert!(
        t.elapsed() >= Duration::from_millis(600) && t.elapsed() < Duration::from_millis(2000),
        "{:?}",
        t.elapsed()
    );

    // Two connections stalled in their handshake fill the limit; a real client
    // still gets in (the oldest stalled one is closed for it) and is served.
    let mut stalled = Vec::new();
    for _ in 0..2 {
        let mut s = TcpStream::connect(server.grpc).await.unwrap();
        // The first bytes of a TLS record, then nothing.
        s.write_all(&[0x16, 0x03, 0x01]).await.unwrap();
        stalled.push(s);
        tokio::time::sleep(Duration::from_millis(30)).await;
    }
    let tls = ClientTlsConfig::new().ca_certificate(Certificate::from_pem(ca.pem()));
    let ch = connect_tls(&server, tls).await.expect("TLS connect");
    let resp = TavliEngineClient::new(ch)
        .list_legal_plays(portes_start_plays(3, 1))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(answer_plays(&resp), core_plays(&portes_start(), 3, 1));
    let n = tokio::time::timeout(Duration::from_millis(500), stalled[0].read(&mut buf))
        .await
        .expect("the oldest stalled handshake was not closed")
        .unwrap_or(0);
    assert_eq!(n, 0);
    server.shutdown().await.unwrap();
}

/// A compressed request is held to the message limit once inflated: a few hundred
/// bytes of gzip or zstd that inflate past `max_message_bytes` are `OUT_OF_RANGE`,
/// and one that inflates to less is served (here: its long Position ID refused
/// by the service, which had to decode it).
#[tokio::test]
async fn compressed_requests_are_held_to_the_message_limit() {
    let server = TestServer::start_with_web(ServerConfig {
        max_message_bytes: 64 * 1024,
        ..ServerConfig::default()
    })
    .await;
    let ch = server.channel().await;
    let request = |id_len: usize| pb::ListLegalPlaysRequest {
        position: Some(pb::list_legal_plays_request::Position::PositionId(
            "a".repeat(id_len),
        )),
        dice: Some(pb::Dice { die1: 3, die2: 1 }),
        ..Default::default()
    };
    for encoding in [CompressionEncoding::Gzip, CompressionEncoding::Zstd] {
        let mut c = TavliEngineClient::new(ch.clone()).send_compressed(encoding);
        let err = c.list_legal_plays(request(1 << 20)).await.unwrap_err();
        assert_eq!(
            (err.code(), err.message()),
            (
                Code::OutOfRange,
                "Error, decompressed message length too large: more than 65536 bytes, the limit is: 65536 bytes"
            ),
            "{encoding:?}"
        );
        let err = c.list_legal_plays(request(60_000)).await.unwrap_err();
        assert_eq!(err.code(), Code::InvalidArgument, "{encoding:?}: {err:?}");
        assert!(
            err.message().starts_with("position.position_id: "),
            "{encoding:?}: {err:?}"
        );
    }
    // Uncompressed, the same request past the limit is tonic's OUT_OF_RANGE.
    let err = TavliEngineClient::new(ch)
        .list_legal_plays(request(1 << 20))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::OutOfRange, "{err:?}");
    server.shutdown().await.unwrap();
}
