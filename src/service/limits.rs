//! Tower layers that protect the server:
//!
//! - [`ConcurrencyLimitLayer`]: at most N RPCs at once; the next one is answered
//!   `RESOURCE_EXHAUSTED` at once (not queued). Health checks and reflection are
//!   exempt, so probes still answer under load. An RPC holds its place until its
//!   response body ends, so a streaming RPC (`AnalyzeGame`) counts while it streams.
//! - [`DeadlineLayer`]: honours the client's `grpc-timeout` (and an optional server
//!   limit): the RPC is answered `DEADLINE_EXCEEDED` when it passes, and the deadline
//!   is put in the request extensions as [`Deadline`] for handlers (evaluation).

use http::{Request, Response};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;
use tonic::body::Body;
use tonic::Status;
use tower::{Layer, Service};

type BoxFuture<T, E> = Pin<Box<dyn Future<Output = Result<T, E>> + Send>>;

/// True for RPC paths that the concurrency limit never rejects (health, reflection).
fn exempt(path: &str) -> bool {
    path.starts_with("/grpc.health.v1.Health/") || path.starts_with("/grpc.reflection.")
}

/// Rejects RPCs beyond `limit` in flight with `RESOURCE_EXHAUSTED`.
#[derive(Clone, Debug)]
pub struct ConcurrencyLimitLayer {
    semaphore: Arc<Semaphore>,
    limit: usize,
}

impl ConcurrencyLimitLayer {
    /// A limit of `limit` concurrent RPCs (at least 1).
    pub fn new(limit: usize) -> ConcurrencyLimitLayer {
        let limit = limit.max(1);
        ConcurrencyLimitLayer {
            semaphore: Arc::new(Semaphore::new(limit)),
            limit,
        }
    }
}

impl<S> Layer<S> for ConcurrencyLimitLayer {
    type Service = ConcurrencyLimit<S>;
    fn layer(&self, inner: S) -> Self::Service {
        ConcurrencyLimit {
            inner,
            layer: self.clone(),
        }
    }
}

/// The service of [`ConcurrencyLimitLayer`].
#[derive(Clone, Debug)]
pub struct ConcurrencyLimit<S> {
    inner: S,
    layer: ConcurrencyLimitLayer,
}

impl<S> Service<Request<Body>> for ConcurrencyLimit<S>
where
    S: Service<Request<Body>, Response = Response<Body>> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = Response<Body>;
    type Error = S::Error;
    type Future = BoxFuture<Response<Body>, S::Error>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<Body>) -> Self::Future {
        let permit = if exempt(req.uri().path()) {
            None
        } else {
            match self.layer.semaphore.clone().try_acquire_owned() {
                Ok(p) => Some(p),
                Err(_) => {
                    let limit = self.layer.limit;
                    return Box::pin(async move {
                        Ok(Status::resource_exhausted(format!(
                            "server overloaded: {limit} requests already in flight; retry later"
                        ))
                        .into_http())
                    });
                }
            }
        };
        let fut = self.inner.call(req);
        Box::pin(async move {
            let r = fut.await;
            match permit {
                // The place is given back when the response body ends (or is dropped).
                Some(permit) => r.map(|resp| {
                    resp.map(|body| {
                        Body::new(PermitBody {
                            inner: body,
                            _permit: permit,
                        })
                    })
                }),
                None => r,
            }
        })
    }
}

/// A response body that holds its RPC's concurrency place until it is dropped.
struct PermitBody {
    inner: Body,
    _permit: tokio::sync::OwnedSemaphorePermit,
}

impl http_body::Body for PermitBody {
    type Data = bytes::Bytes;
    type Error = Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<bytes::Bytes>, Status>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// The deadline of an RPC, in the request extensions (set by [`DeadlineLayer`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Deadline(pub Instant);

/// Parses a `grpc-timeout` header value: up to 8 digits and a unit `H`, `M`, `S`,
/// `m` (ms), `u` (µs) or `n` (ns). `None` when malformed.
pub fn parse_grpc_timeout(v: &str) -> Option<Duration> {
    if v.len() < 2 || v.len() > 9 {
        return None;
    }
    let (digits, unit) = v.split_at(v.len() - 1);
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: u64 = digits.parse().ok()?;
    Some(match unit {
        "H" => Duration::from_secs(n * 3600),
        "M" => Duration::from_secs(n * 60),
        "S" => Duration::from_secs(n),
        "m" => Duration::from_millis(n),
        "u" => Duration::from_micros(n),
        "n" => Duration::from_nanos(n),
        _ => return None,
    })
}

/// Answers `DEADLINE_EXCEEDED` when the client's `grpc-timeout` (or `max`, the
/// server's own limit, whichever is shorter) passes.
#[derive(Clone, Copy, Debug, Default)]
pub struct DeadlineLayer {
    max: Option<Duration>,
}

impl DeadlineLayer {
    /// A deadline layer with an optional server-side limit per RPC.
    pub fn new(max: Option<Duration>) -> DeadlineLayer {
        DeadlineLayer { max }
    }
}

impl<S> Layer<S> for DeadlineLayer {
    type Service = DeadlineService<S>;
    fn layer(&self, inner: S) -> Self::Service {
        DeadlineService {
            inner,
            max: self.max,
        }
    }
}

/// The service of [`DeadlineLayer`].
#[derive(Clone, Debug)]
pub struct DeadlineService<S> {
    inner: S,
    max: Option<Duration>,
}

impl<S> Service<Request<Body>> for DeadlineService<S>
where
    S: Service<Request<Body>, Response = Response<Body>> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = Response<Body>;
    type Error = S::Error;
    type Future = BoxFuture<Response<Body>, S::Error>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: Request<Body>) -> Self::Future {
        let client = req
            .headers()
            .get("grpc-timeout")
            .and_then(|v| v.to_str().ok())
            .and_then(parse_grpc_timeout);
        let timeout = match (client, self.max) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let Some(timeout) = timeout else {
            return Box::pin(self.inner.call(req));
        };
        req.extensions_mut()
            .insert(Deadline(Instant::now() + timeout));
        let fut = self.inner.call(req);
        Box::pin(async move {
            match tokio::time::timeout(timeout, fut).await {
                Ok(r) => r,
                Err(_) => Ok(Status::deadline_exceeded(format!(
                    "deadline of {timeout:?} exceeded"
                ))
                .into_http()),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grpc_timeouts() {
        assert_eq!(parse_grpc_timeout("5S"), Some(Duration::from_secs(5)));
        assert_eq!(parse_grpc_timeout("250m"), Some(Duration::from_millis(250)));
        assert_eq!(parse_grpc_timeout("1H"), Some(Duration::from_secs(3600)));
        assert_eq!(
            parse_grpc_timeout("99999999n"),
            Some(Duration::from_nanos(99999999))
        );
        assert_eq!(parse_grpc_timeout("S"), None);
        assert_eq!(parse_grpc_timeout("5s"), None);
        assert_eq!(parse_grpc_timeout("123456789S"), None);
        assert_eq!(parse_grpc_timeout("-5S"), None);
    }
}
