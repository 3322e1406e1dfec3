//! Buffered message bytes: how much request and response data the server holds.
//!
//! A request body is read into memory before its RPC runs, and a response is held
//! from the moment the handler produces it until HTTP/2 has written it to the socket:
//! a client that never reads (a zero flow-control window, a full TCP window) would
//! otherwise make the server hold every response it asks for. Both are charged:
//!
//! - to the server's [`Budget`] (`--max-buffered-bytes`), and
//! - to their connection's share ([`ConnState`], `--max-connection-buffered-bytes`),
//!
//! and released when the bytes are gone: a request's when its RPC ends, a response's
//! when hyper and h2 drop the last reference to its data, that is once it has been
//! written or its stream reset. The response data is handed to hyper as
//! [`Bytes::from_owner`] of a [`Charged`] owner, so the release is exact whatever
//! h2 does with the buffer. A charge that does not fit is refused:
//! `RESOURCE_EXHAUSTED`.
//!
//! Unwritten responses are also counted by the send epoch they were produced in (a
//! quarter of the send timeout, [`SEND_EPOCHS`] slots per connection); the
//! connection's watchdog ([`super::conn`]) closes a connection that still holds a
//! response produced more than the send timeout ago, which frees it.

use super::conn::{ConnState, SEND_EPOCHS};
use bytes::Bytes;
use http_body::Frame;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::sync::OwnedSemaphorePermit;
use tonic::body::Body;
use tonic::Status;

/// The server-wide limit of buffered message bytes.
#[derive(Debug)]
pub struct Budget {
    used: AtomicUsize,
    limit: usize,
}

impl Budget {
    /// A budget of `limit` bytes.
    pub fn new(limit: usize) -> Arc<Budget> {
        Arc::new(Budget {
            used: AtomicUsize::new(0),
            limit,
        })
    }

    /// Bytes charged now.
    pub fn used(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }

    /// The limit in bytes.
    pub fn limit(&self) -> usize {
        self.limit
    }
}

/// Adds `n` to `counter` if the sum stays within `limit`.
fn try_add(counter: &AtomicUsize, n: usize, limit: usize) -> bool {
    let prev = counter.fetch_add(n, Ordering::AcqRel);
    if prev.saturating_add(n) > limit {
        counter.fetch_sub(n, Ordering::AcqRel);
        return false;
    }
    true
}

/// `n` bytes charged to the budget and to a connection, released on drop.
#[derive(Debug)]
pub struct Charge {
    budget: Arc<Budget>,
    conn: Option<Arc<ConnState>>,
    n: usize,
    /// The send-epoch slot of an unwritten response.
    slot: Option<usize>,
}

impl Charge {
    /// Charges `n` bytes, or `None` when the budget or the connection's share is
    /// full. `sending`: the bytes are a response waiting to be written (counted for
    /// the send timeout).
    pub fn try_new(
        budget: &Arc<Budget>,
        conn: Option<&Arc<ConnState>>,
        n: usize,
        sending: bool,
    ) -> Option<Charge> {
        if let Some(c) = conn {
            if !try_add(&c.buffered, n, c.max_buffered) {
                return None;
            }
        }
        if !try_add(&budget.used, n, budget.limit) {
            if let Some(c) = conn {
                c.buffered.fetch_sub(n, Ordering::AcqRel);
            }
            return None;
        }
        let slot = match conn {
            Some(c) if sending => {
                let slot = (c.send_epoch() % SEND_EPOCHS as u64) as usize;
                c.sending[slot].fetch_add(1, Ordering::Relaxed);
                Some(slot)
            }
            _ => None,
        };
        Some(Charge {
            budget: budget.clone(),
            conn: conn.cloned(),
            n,
            slot,
        })
    }

    /// Adds `more` bytes to this charge, or `false` when they do not fit.
    pub fn try_grow(&mut self, more: usize) -> bool {
        if let Some(c) = &self.conn {
            if !try_add(&c.buffered, more, c.max_buffered) {
                return false;
            }
        }
        if !try_add(&self.budget.used, more, self.budget.limit) {
            if let Some(c) = &self.conn {
                c.buffered.fetch_sub(more, Ordering::AcqRel);
            }
            return false;
        }
        self.n += more;
        true
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        self.budget.used.fetch_sub(self.n, Ordering::AcqRel);
        if let Some(c) = &self.conn {
            c.buffered.fetch_sub(self.n, Ordering::AcqRel);
            if let Some(slot) = self.slot {
                c.sending[slot].fetch_sub(1, Ordering::Relaxed);
            }
        }
    }
}

/// Response data and its charge: the owner of the [`Bytes`] handed to hyper, with
/// what must be held until the data is written (the connection's RPC slot).
struct Charged {
    data: Bytes,
    _charge: Charge,
    _slot: Option<OwnedSemaphorePermit>,
}

impl AsRef<[u8]> for Charged {
    fn as_ref(&self) -> &[u8] {
        &self.data
    }
}

/// The answer to a request whose message does not fit in the buffers.
pub fn buffers_full() -> Status {
    Status::resource_exhausted(
        "server overloaded: no room to buffer this message (too many unread responses); retry later",
    )
}

/// Charges a response chunk, keeping `slot` until it is written; `Err` gives the
/// chunk back when it does not fit.
pub fn charge_response(
    data: Bytes,
    budget: &Arc<Budget>,
    conn: Option<&Arc<ConnState>>,
    slot: Option<OwnedSemaphorePermit>,
) -> Result<Bytes, Bytes> {
    if data.is_empty() {
        return Ok(data);
    }
    match Charge::try_new(budget, conn, data.len(), true) {
        Some(charge) => Ok(Bytes::from_owner(Charged {
            data,
            _charge: charge,
            _slot: slot,
        })),
        None => Err(data),
    }
}

/// A response body whose data is charged as it is produced (see the module docs);
/// when a chunk does not fit the body ends with `RESOURCE_EXHAUSTED` trailers. It also
/// keeps `hold` (the stream's guard, a permit) until the response is over.
pub struct ChargedBody<H> {
    inner: Body,
    /// A frame read ahead (the first, charged already).
    first: Option<Frame<Bytes>>,
    budget: Arc<Budget>,
    conn: Option<Arc<ConnState>>,
    done: bool,
    _hold: H,
}

impl<H> ChargedBody<H> {
    /// Wraps `inner`, whose already-read (and charged) first frame is `first`.
    pub fn new(
        inner: Body,
        first: Option<Frame<Bytes>>,
        budget: Arc<Budget>,
        conn: Option<Arc<ConnState>>,
        hold: H,
    ) -> Self {
        ChargedBody {
            inner,
            first,
            budget,
            conn,
            done: false,
            _hold: hold,
        }
    }
}

impl<H: Unpin> http_body::Body for ChargedBody<H> {
    type Data = Bytes;
    type Error = Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Status>>> {
        let this = &mut *self;
        if this.done {
            return Poll::Ready(None);
        }
        if let Some(f) = this.first.take() {
            return Poll::Ready(Some(Ok(f)));
        }
        let frame = match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(f))) => f,
            other => return other,
        };
        match frame.into_data() {
            Ok(data) => match charge_response(data, &this.budget, this.conn.as_ref(), None) {
                Ok(data) => Poll::Ready(Some(Ok(Frame::data(data)))),
                Err(_) => {
                    this.done = true;
                    let mut trailers = http::HeaderMap::new();
                    let _ = buffers_full().add_header(&mut trailers);
                    Poll::Ready(Some(Ok(Frame::trailers(trailers))))
                }
            },
            Err(frame) => Poll::Ready(Some(Ok(frame))),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.done || (self.first.is_none() && self.inner.is_end_stream())
    }

    fn size_hint(&self) -> http_body::SizeHint {
        match &self.first {
            Some(_) => http_body::SizeHint::default(),
            None => self.inner.size_hint(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charges_fit_the_budget_and_are_released_on_drop() {
        let budget = Budget::new(100);
        let a = Charge::try_new(&budget, None, 60, false).unwrap();
        assert!(Charge::try_new(&budget, None, 41, false).is_none());
        let mut b = Charge::try_new(&budget, None, 40, false).unwrap();
        assert_eq!(budget.used(), 100);
        assert!(!b.try_grow(1));
        drop(a);
        assert!(b.try_grow(10));
        assert_eq!(budget.used(), 50);
        drop(b);
        assert_eq!(budget.used(), 0);
    }

    /// A charged response is released when the last reference to its bytes goes
    /// (h2 drops them once written), not when the first handle is dropped.
    #[test]
    fn response_bytes_are_released_with_their_last_reference() {
        let budget = Budget::new(10);
        let data = charge_response(Bytes::from_static(b"0123456789"), &budget, None, None).unwrap();
        assert_eq!(&data[..], b"0123456789");
        assert_eq!(budget.used(), 10);
        let refused = charge_response(Bytes::from_static(b"x"), &budget, None, None);
        assert_eq!(refused, Err(Bytes::from_static(b"x")));
        let tail = data.slice(5..);
        drop(data);
        assert_eq!(budget.used(), 10);
        drop(tail);
        assert_eq!(budget.used(), 0);
        assert_eq!(
            charge_response(Bytes::new(), &budget, None, None),
            Ok(Bytes::new())
        );
    }
}
