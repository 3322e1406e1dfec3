//! gRPC protocol conformance of requests, checked before any work:
//!
//! - [`is_grpc_content_type`]: a request whose `content-type` is not `application/grpc`
//!   (nor `application/grpc+…` or `application/grpc;…`) is answered HTTP 415
//!   Unsupported Media Type, as the gRPC over HTTP/2 protocol says servers should
//!   ("If Content-Type does not begin with "application/grpc", gRPC servers SHOULD
//!   respond with HTTP status of 415"), so that an HTTP/2 client that does not speak
//!   gRPC does not read an error as a success. Like grpc-go
//!   (`internal/transport/http2_server.go`), the answer also carries `grpc-status` 3
//!   (`INVALID_ARGUMENT`) and a `grpc-message` naming the content type. gRPC-Web
//!   requests reach it through tonic-web, which has already made them
//!   `application/grpc`. Admission ([`super::limits`]) checks it first, before it
//!   reads anything ([`unsupported_media_type`] is the answer).
//! - [`one_message`]: the body of a unary or server-streaming call must hold exactly
//!   one message. A body with more is a request cardinality violation, answered
//!   `INTERNAL` as grpc-go (`stream.go`: "cardinality violation: received multiple
//!   request messages for non-client-streaming RPC") and grpc-java (`ServerCalls`:
//!   "Too many requests") answer it, before the handler runs. (gRPC's
//!   `doc/statuscodes.md` lists `UNIMPLEMENTED` for it; grpc-go and grpc-java, and
//!   their maintainers in grpc-java#11247 and grpc-go#7286, keep `INTERNAL`.) tonic
//!   alone would answer from the first message and drop the rest.

use http::{HeaderValue, Response, StatusCode};
use tonic::body::Body;
use tonic::Status;

/// Whether a `content-type` names gRPC: `application/grpc`, alone or followed by
/// `+` (a subtype such as `+proto`) or `;` (parameters); case-insensitive (RFC 9110
/// §8.3.1).
pub fn is_grpc_content_type(value: Option<&HeaderValue>) -> bool {
    const GRPC: &[u8] = b"application/grpc";
    let Some(v) = value.map(HeaderValue::as_bytes) else {
        return false;
    };
    v.len() >= GRPC.len()
        && v[..GRPC.len()].eq_ignore_ascii_case(GRPC)
        && matches!(v.get(GRPC.len()), None | Some(b'+' | b';'))
}

/// The answer to a request that is not gRPC: HTTP 415 with `grpc-status` 3
/// (`INVALID_ARGUMENT`) and a message naming the content type (its first 64 bytes).
pub fn unsupported_media_type(value: Option<&HeaderValue>) -> Response<Body> {
    let named = match value {
        None => "no content-type".to_string(),
        Some(v) => {
            let text = String::from_utf8_lossy(v.as_bytes());
            let cut: String = text.chars().take(64).collect();
            format!("content-type {cut:?}")
        }
    };
    let mut r = Status::invalid_argument(format!(
        "invalid gRPC request: {named}; gRPC requests have content-type application/grpc \
         (or application/grpc+proto)"
    ))
    .into_http();
    *r.status_mut() = StatusCode::UNSUPPORTED_MEDIA_TYPE;
    r
}

/// Checks that a request body read in full (gRPC length-prefixed messages) holds
/// one message at most: `Err(INTERNAL)` naming `path` and the number of messages
/// when more follow the first. A body that does not hold one whole message (empty,
/// cut short, or declaring more than `max_message` bytes) passes: tonic answers it
/// (`INTERNAL` "Missing request message", `OUT_OF_RANGE`).
#[allow(clippy::result_large_err)] // tonic's Status, as every handler returns
pub fn one_message(body: &[u8], max_message: usize, path: &str) -> Result<(), Status> {
    let Some(first) = message_end(body, 0, max_message) else {
        return Ok(());
    };
    if first == body.len() {
        return Ok(());
    }
    // Count what follows (a last message may be cut short: it counts too).
    let mut messages = 2;
    let mut at = first;
    while let Some(end) = message_end(body, at, usize::MAX).filter(|e| *e < body.len()) {
        messages += 1;
        at = end;
    }
    Err(Status::internal(format!(
        "cardinality violation: the request holds {messages} messages; {path} takes exactly one \
         request message"
    )))
}

/// The end of the message whose 5-byte prefix starts at `at`, if its prefix is whole,
/// it declares at most `max` bytes and they are all there.
fn message_end(body: &[u8], at: usize, max: usize) -> Option<usize> {
    let prefix = body.get(at..at.checked_add(5)?)?;
    let len = u32::from_be_bytes([prefix[1], prefix[2], prefix[3], prefix[4]]) as usize;
    if len > max {
        return None;
    }
    let end = at + 5 + len;
    (end <= body.len()).then_some(end)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(payload: &[u8]) -> Vec<u8> {
        let mut v = vec![0];
        v.extend_from_slice(&(payload.len() as u32).to_be_bytes());
        v.extend_from_slice(payload);
        v
    }

    #[test]
    fn grpc_content_types() {
        let ok = [
            "application/grpc",
            "application/grpc+proto",
            "application/grpc+json",
            "application/grpc;charset=utf-8",
            "Application/GRPC",
        ];
        for v in ok {
            assert!(
                is_grpc_content_type(Some(&HeaderValue::from_static(v))),
                "{v}"
            );
        }
        let bad = [
            "application/json",
            "text/plain",
            "application/grpc-web",
            "application/grpc-web+proto",
            "application/grpcx",
            "application/grp",
            "",
        ];
        for v in bad {
            assert!(
                !is_grpc_content_type(Some(&HeaderValue::from_static(v))),
                "{v}"
            );
        }
        assert!(!is_grpc_content_type(None));
    }

    #[test]
    fn the_refusal_is_415_with_invalid_argument() {
        let r = unsupported_media_type(Some(&HeaderValue::from_static("application/json")));
        assert_eq!(r.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
        assert_eq!(r.headers()["content-type"], "application/grpc");
        assert_eq!(r.headers()["grpc-status"], "3");
        let r = unsupported_media_type(None);
        assert_eq!(r.headers()["grpc-status"], "3");
    }

    #[test]
    fn bodies_with_more_than_one_message_are_refused() {
        let p = "/tavli.v1.TavliEngine/ListLegalPlays";
        let one = frame(b"abc");
        assert!(one_message(&one, 100, p).is_ok());
        assert!(one_message(&frame(b""), 100, p).is_ok());
        // Nothing, a cut prefix, a cut message, a message over the limit: tonic's.
        assert!(one_message(b"", 100, p).is_ok());
        assert!(one_message(&one[..3], 100, p).is_ok());
        assert!(one_message(&one[..6], 100, p).is_ok());
        assert!(one_message(&[one.clone(), one.clone()].concat(), 2, p).is_ok());

        let two = [one.clone(), frame(b"de")].concat();
        let e = one_message(&two, 100, p).unwrap_err();
        assert_eq!(e.code(), tonic::Code::Internal);
        assert_eq!(
            e.message(),
            "cardinality violation: the request holds 2 messages; \
             /tavli.v1.TavliEngine/ListLegalPlays takes exactly one request message"
        );
        let three = [one.clone(), frame(b""), frame(b"x")].concat();
        assert!(one_message(&three, 100, p)
            .unwrap_err()
            .message()
            .contains("holds 3 messages"));
        // One whole message and one byte of another: a second message begins.
        let more = [one.clone(), vec![0]].concat();
        assert!(one_message(&more, 100, p)
            .unwrap_err()
            .message()
            .contains("holds 2 messages"));
    }
}
