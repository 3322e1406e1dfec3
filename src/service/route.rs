//! [`EngineRoutes`]: the `tavli.v1.TavliEngine` service as the server mounts it.
//!
//! `ListLegalPlays` is answered with the bytes of [`super::wire`] (same response,
//! written into tonic's response buffer without building the message); every other
//! method goes to the generated [`TavliEngineServer`]. Both use tonic's unary handling, so framing, status codes,
//! message-size limits, compression and the tower layers around the service are the
//! same. Compression: requests compressed with gzip or zstd are accepted on every
//! method (`grpc-encoding`); with [`EngineRoutes::send_compressed`] responses are
//! compressed too for clients that accept it (`grpc-accept-encoding`), the
//! pre-encoded `ListLegalPlays` bytes included (tonic compresses what the encoder
//! wrote).

use super::api::TavliEngineService;
use super::pb;
use super::pb::tavli_engine_server::TavliEngineServer;
use super::wire::LegalPlaysAnswer;
use super::SERVICE_NAME;
use bytes::Buf;
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tonic::body::Body;
use tonic::codec::{Codec, CompressionEncoding, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::server::{Grpc, NamedService, UnaryService};
use tonic::{Request, Response, Status};

/// The path of the method answered here.
const LIST_LEGAL_PLAYS: &str = "/tavli.v1.TavliEngine/ListLegalPlays";

/// The engine service: `ListLegalPlays` from pre-encoded bytes, the rest generated.
#[derive(Clone)]
pub struct EngineRoutes {
    service: Arc<TavliEngineService>,
    generated: TavliEngineServer<TavliEngineService>,
    max_message_bytes: usize,
    /// Responses compressed for clients that accept it ([`EngineRoutes::send_compressed`]).
    send_compressed: bool,
}

/// The compressions accepted on requests and, when turned on, used for responses.
const ENCODINGS: [CompressionEncoding; 2] = [CompressionEncoding::Gzip, CompressionEncoding::Zstd];

impl EngineRoutes {
    /// The service with the largest request and response message in bytes (larger
    /// requests are answered `OUT_OF_RANGE`, larger responses `OUT_OF_RANGE` too).
    /// Requests compressed with gzip or zstd are accepted; responses are sent
    /// uncompressed.
    pub fn new(service: TavliEngineService, max_message_bytes: usize) -> EngineRoutes {
        let service = Arc::new(service);
        EngineRoutes {
            generated: generated(&service, max_message_bytes, false),
            service,
            max_message_bytes,
            send_compressed: false,
        }
    }

    /// With `on`, a response is compressed with the first of gzip and zstd that the
    /// client's `grpc-accept-encoding` lists (none: uncompressed); `false` leaves
    /// every response uncompressed.
    pub fn send_compressed(mut self, on: bool) -> EngineRoutes {
        self.generated = generated(&self.service, self.max_message_bytes, on);
        self.send_compressed = on;
        self
    }
}

/// The generated server for the other methods: the message-size limit, gzip and
/// zstd requests accepted, and responses compressed when `send_compressed`.
fn generated(
    service: &Arc<TavliEngineService>,
    max_message_bytes: usize,
    send_compressed: bool,
) -> TavliEngineServer<TavliEngineService> {
    let mut server = TavliEngineServer::from_arc(service.clone())
        .max_decoding_message_size(max_message_bytes)
        .max_encoding_message_size(max_message_bytes);
    for e in ENCODINGS {
        server = server.accept_compressed(e);
        if send_compressed {
            server = server.send_compressed(e);
        }
    }
    server
}

impl NamedService for EngineRoutes {
    const NAME: &'static str = SERVICE_NAME;
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = Result<T, Infallible>> + Send + 'static>>;

impl<B> tower::Service<http::Request<B>> for EngineRoutes
where
    B: http_body::Body<Data = bytes::Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>> + Send + 'static,
{
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture<Self::Response>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<B>) -> Self::Future {
        if req.uri().path() != LIST_LEGAL_PLAYS {
            return Box::pin(self.generated.call(req));
        }
        let method = ListLegalPlays(self.service.clone());
        let mut grpc = Grpc::new(EncodedCodec).apply_max_message_size_config(
            Some(self.max_message_bytes),
            Some(self.max_message_bytes),
        );
        for e in ENCODINGS {
            grpc = grpc.accept_compressed(e);
            if self.send_compressed {
                grpc = grpc.send_compressed(e);
            }
        }
        Box::pin(async move { Ok(grpc.unary(method, req).await) })
    }
}

/// `ListLegalPlays` as a tonic unary service answering with the plays to write.
struct ListLegalPlays(Arc<TavliEngineService>);

impl UnaryService<pb::ListLegalPlaysRequest> for ListLegalPlays {
    type Response = LegalPlaysAnswer;
    type Future = std::future::Ready<Result<Response<LegalPlaysAnswer>, Status>>;

    fn call(&mut self, request: Request<pb::ListLegalPlaysRequest>) -> Self::Future {
        std::future::ready(
            self.0
                .list_legal_plays_answer(request.get_ref())
                .map(Response::new)
                .map_err(Status::from),
        )
    }
}

/// Requests decoded by prost ([`RequestDecoder`]), responses written by [`super::wire`].
#[derive(Clone, Copy, Default)]
struct EncodedCodec;

struct EncodedEncoder;

impl Encoder for EncodedEncoder {
    type Item = LegalPlaysAnswer;
    type Error = Status;

    /// The bytes go straight into tonic's buffer (after the frame header it left).
    fn encode(&mut self, item: LegalPlaysAnswer, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        dst.reserve(item.size_hint());
        item.encode(dst);
        Ok(())
    }
}

impl Codec for EncodedCodec {
    type Encode = LegalPlaysAnswer;
    type Decode = pb::ListLegalPlaysRequest;
    type Encoder = EncodedEncoder;
    type Decoder = RequestDecoder;

    fn encoder(&mut self) -> EncodedEncoder {
        EncodedEncoder
    }

    fn decoder(&mut self) -> RequestDecoder {
        RequestDecoder
    }
}

/// The request decoded by prost as tonic's `ProstDecoder` decodes it (the same
/// message, the same `INTERNAL` status on bad bytes), but from the message's bytes as
/// one slice: every field read from tonic's buffer costs a `BytesMut` advance, from a
/// slice a pointer increment (about half the decoding cost of a request with a
/// structured position).
struct RequestDecoder;

impl Decoder for RequestDecoder {
    type Item = pb::ListLegalPlaysRequest;
    type Error = Status;

    fn decode(&mut self, buf: &mut DecodeBuf<'_>) -> Result<Option<Self::Item>, Status> {
        use prost::Message;
        let len = buf.remaining();
        // Tonic's buffer holds a message in one piece; anything else is read as is.
        let item = if buf.chunk().len() == len {
            let item = pb::ListLegalPlaysRequest::decode(buf.chunk());
            buf.advance(len);
            item
        } else {
            pb::ListLegalPlaysRequest::decode(buf)
        };
        // As `ProstDecoder`: gRPC's status for a message that does not parse.
        item.map(Some).map_err(|e| Status::internal(e.to_string()))
    }
}
