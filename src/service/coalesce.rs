//! Write coalescing: a connection's writes gathered in one buffer and sent with one
//! system call each time its task has done what it could.
//!
//! h2 (under hyper) writes a DATA frame larger than 256 bytes by handing its payload
//! to a vectored write of its own, and flushes before it buffers the next frame: one
//! `writev` per response, plus one for the trailers left behind. On loopback every
//! `writev` also runs the receiving end's TCP input, so a `ListLegalPlays` answer
//! (about 5 KB) cost 1.8 `writev` per call against 0.8 for a Health/Check answer,
//! which h2 copies into its buffer (docs/performance.md, "Service").
//!
//! [`coalesce`] splits a connection's stream into [`Coalesced`], the stream hyper
//! serves (its writes and flushes land in a buffer), and [`Flushing`], the wrapper of
//! the connection future: each time the connection future has been polled (it has
//! written every frame it had), [`Flushing`] writes the buffer to the stream. So the
//! frames of every response ready at that moment leave in one write.
//!
//! Bounds: the buffer holds at most [`MAX_PENDING`] bytes; a write that does not fit
//! first sends what is buffered, and waits (`Pending`) while the socket is full, so a
//! client that does not read holds back h2 and its responses as before (the send
//! timeout of [`super::conn`] still sees them). A buffer above [`KEEP_CAPACITY`] is
//! freed once it has been sent, so an idle connection keeps at most that much.
//! Nothing is held past the connection's task: every poll ends with a write attempt,
//! and a socket that is not writable wakes the task when it is.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// Most bytes buffered before a write must go out first (64 KiB: loopback's and
/// most paths' TCP segments are smaller, so larger batches gain nothing).
pub const MAX_PENDING: usize = 64 * 1024;

/// Buffer capacity kept between batches; a larger buffer is freed once sent.
pub const KEEP_CAPACITY: usize = 16 * 1024;

/// The stream and its unsent bytes, shared by [`Coalesced`] and [`Flushing`] (both
/// are polled by the connection's one task, so the lock is never contended).
#[derive(Debug)]
struct Inner<IO> {
    io: IO,
    buf: Vec<u8>,
    /// Bytes of `buf` already written.
    sent: usize,
    /// A write error met while flushing from [`Flushing`]: reported to hyper on
    /// its next write or flush.
    error: Option<io::Error>,
}

impl<IO: AsyncWrite + Unpin> Inner<IO> {
    /// Writes the buffer out (then flushes the stream: TLS sends its records).
    fn poll_send(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if let Some(e) = self.error.take() {
            return Poll::Ready(Err(e));
        }
        while self.sent < self.buf.len() {
            let n =
                std::task::ready!(Pin::new(&mut self.io).poll_write(cx, &self.buf[self.sent..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.sent += n;
        }
        if self.buf.capacity() > KEEP_CAPACITY {
            self.buf = Vec::new();
        } else {
            self.buf.clear();
        }
        self.sent = 0;
        Pin::new(&mut self.io).poll_flush(cx)
    }
}

/// The stream as hyper sees it: reads pass through, writes are buffered (see the
/// module documentation).
#[derive(Debug)]
pub struct Coalesced<IO>(Arc<Mutex<Inner<IO>>>);

/// The other half of [`coalesce`]: wraps the connection future ([`Flusher::around`]).
#[derive(Debug)]
pub struct Flusher<IO>(Arc<Mutex<Inner<IO>>>);

/// A connection future that sends the buffered writes of its [`Coalesced`] stream
/// after each poll.
#[derive(Debug)]
pub struct Flushing<C, IO> {
    conn: Pin<Box<C>>,
    inner: Arc<Mutex<Inner<IO>>>,
}

/// `io` as a [`Coalesced`] stream for hyper, and the [`Flusher`] that wraps the
/// connection future serving it.
pub fn coalesce<IO>(io: IO) -> (Coalesced<IO>, Flusher<IO>) {
    let inner = Arc::new(Mutex::new(Inner {
        io,
        buf: Vec::new(),
        sent: 0,
        error: None,
    }));
    (Coalesced(inner.clone()), Flusher(inner))
}

fn lock<IO>(m: &Mutex<Inner<IO>>) -> MutexGuard<'_, Inner<IO>> {
    // A panic while holding the lock leaves plain bytes and a stream: still usable.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl<IO> Flusher<IO> {
    /// `conn` (the connection future serving the [`Coalesced`] stream) with its
    /// writes sent after each of its polls.
    pub fn around<C: Future>(self, conn: C) -> Flushing<C, IO> {
        Flushing {
            conn: Box::pin(conn),
            inner: self.0,
        }
    }
}

impl<C, IO> Flushing<C, IO> {
    /// The connection future (for hyper's `graceful_shutdown`).
    pub fn conn(&mut self) -> Pin<&mut C> {
        self.conn.as_mut()
    }

    /// Drops the connection future and gives back its stream with the bytes not yet
    /// written to it (for a lingering close, [`super::conn`]). `None` while the
    /// stream is still shared, which it is not once the connection future is gone.
    pub fn into_io(self) -> Option<(IO, Vec<u8>)> {
        let Flushing { conn, inner } = self;
        drop(conn);
        let inner = Arc::try_unwrap(inner).ok()?;
        let Inner {
            io, mut buf, sent, ..
        } = inner.into_inner().unwrap_or_else(|e| e.into_inner());
        buf.drain(..sent);
        Some((io, buf))
    }
}

impl<C: Future, IO: AsyncWrite + Unpin> Future for Flushing<C, IO> {
    type Output = C::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<C::Output> {
        let r = self.conn.as_mut().poll(cx);
        let mut inner = lock(&self.inner);
        if inner.error.is_none() && !inner.buf.is_empty() {
            // Pending: the socket is full and wakes this task when it is writable.
            if let Poll::Ready(Err(e)) = inner.poll_send(cx) {
                // For hyper to see on its next write or flush: poll it again.
                inner.error = Some(e);
                cx.waker().wake_by_ref();
            }
        }
        r
    }
}

impl<IO: AsyncRead + Unpin> AsyncRead for Coalesced<IO> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut lock(&self.0).io).poll_read(cx, buf)
    }
}

impl<IO: AsyncWrite + Unpin> AsyncWrite for Coalesced<IO> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.poll_write_vectored(cx, &[io::IoSlice::new(buf)])
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let mut inner = lock(&self.0);
        if let Some(e) = inner.error.take() {
            return Poll::Ready(Err(e));
        }
        let total: usize = bufs.iter().map(|b| b.len()).sum();
        if !inner.buf.is_empty() && inner.buf.len() + total > MAX_PENDING {
            std::task::ready!(inner.poll_send(cx))?;
        }
        if total >= MAX_PENDING {
            // Nothing is buffered now: a write this large goes out as it is.
            return Pin::new(&mut inner.io).poll_write_vectored(cx, bufs);
        }
        let need = inner.buf.len() + total;
        if need > inner.buf.capacity() {
            let cap = if need <= KEEP_CAPACITY {
                KEEP_CAPACITY
            } else {
                MAX_PENDING
            };
            let len = inner.buf.len();
            inner.buf.reserve_exact(cap - len);
        }
        for b in bufs {
            inner.buf.extend_from_slice(b);
        }
        Poll::Ready(Ok(total))
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    /// Ready at once: the buffer is sent when the connection future's poll ends.
    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match lock(&self.0).error.take() {
            Some(e) => Poll::Ready(Err(e)),
            None => Poll::Ready(Ok(())),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let mut inner = lock(&self.0);
        std::task::ready!(inner.poll_send(cx))?;
        Pin::new(&mut inner.io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    /// A stream that records each write it is given, and fails them once `fail`.
    #[derive(Clone, Default)]
    struct Recorder {
        writes: Arc<Mutex<Vec<Vec<u8>>>>,
        fail: bool,
        /// Bytes it takes before it is full (`Pending` for ever); `None`: no limit.
        room: Option<usize>,
    }

    impl AsyncRead for Recorder {
        fn poll_read(
            self: Pin<&mut Self>,
            _cx: &mut Context<'_>,
            _buf: &mut ReadBuf<'_>,
        ) -> Poll<io::Result<()>> {
            Poll::Pending
        }
    }

    impl AsyncWrite for Recorder {
        fn poll_write(
            self: Pin<&mut Self>,
            _cx: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<io::Result<usize>> {
            if self.fail {
                return Poll::Ready(Err(io::ErrorKind::BrokenPipe.into()));
            }
            let mut writes = self.writes.lock().unwrap();
            let taken: usize = writes.iter().map(Vec::len).sum();
            let n = self.room.map_or(buf.len(), |r| buf.len().min(r - taken));
            if n == 0 {
                return Poll::Pending;
            }
            writes.push(buf[..n].to_vec());
            Poll::Ready(Ok(n))
        }

        fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }

        fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    fn sizes(r: &Recorder) -> Vec<usize> {
        r.writes.lock().unwrap().iter().map(Vec::len).collect()
    }

    /// Polls `conn` once (it writes what it has, then waits forever).
    async fn poll_once<C: Future + Unpin>(conn: &mut C) {
        let r = tokio::time::timeout(std::time::Duration::from_millis(20), conn).await;
        assert!(r.is_err(), "the connection future must still be waiting");
    }

    #[tokio::test]
    async fn writes_and_flushes_of_one_poll_leave_in_one_write() {
        let rec = Recorder::default();
        let (mut io, flusher) = coalesce(rec.clone());
        let mut conn = flusher.around(async move {
            for chunk in [&b"HEADERS"[..], b"DATA", b"TRAILERS"] {
                io.write_all(chunk).await.unwrap();
                io.flush().await.unwrap();
            }
            std::future::pending::<()>().await
        });
        poll_once(&mut conn).await;
        assert_eq!(
            *rec.writes.lock().unwrap(),
            vec![b"HEADERSDATATRAILERS".to_vec()]
        );
    }

    #[tokio::test]
    async fn a_full_buffer_is_sent_first_and_large_writes_go_out_as_they_are() {
        let rec = Recorder::default();
        let (mut io, flusher) = coalesce(rec.clone());
        let mut conn = flusher.around(async move {
            for n in [30_000, 30_000, 30_000] {
                io.write_all(&vec![7u8; n]).await.unwrap();
            }
            io.flush().await.unwrap();
            // Buffered: 30,000; then a write of MAX_PENDING sends those first, and
            // itself without copying.
            io.write_all(&vec![8u8; MAX_PENDING]).await.unwrap();
            io.write_all(b"end").await.unwrap();
            std::future::pending::<()>().await
        });
        poll_once(&mut conn).await;
        assert_eq!(sizes(&rec), vec![60_000, 30_000, MAX_PENDING, 3]);
        let all: Vec<u8> = rec.writes.lock().unwrap().concat();
        assert_eq!(all.len(), 90_000 + MAX_PENDING + 3);
        assert!(all[..90_000].iter().all(|&b| b == 7));
        assert!(all[90_000..90_000 + MAX_PENDING].iter().all(|&b| b == 8));
    }

    #[tokio::test]
    async fn a_failed_send_is_reported_on_the_next_write() {
        let rec = Recorder {
            fail: true,
            ..Recorder::default()
        };
        let (mut io, flusher) = coalesce(rec.clone());
        let (tx, rx) = tokio::sync::oneshot::channel();
        let mut conn = flusher.around(async move {
            io.write_all(b"answer").await.unwrap();
            // The write above is only buffered; the send after this poll fails.
            tokio::task::yield_now().await;
            let _ = tx.send(io.write_all(b"more").await);
            std::future::pending::<()>().await
        });
        poll_once(&mut conn).await;
        let e = rx.await.unwrap().unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::BrokenPipe);
        assert!(sizes(&rec).is_empty());
    }

    #[tokio::test]
    async fn shutdown_sends_what_is_buffered_first() {
        let rec = Recorder::default();
        let (mut io, flusher) = coalesce(rec.clone());
        let conn = flusher.around(async move {
            io.write_all(b"GOAWAY").await.unwrap();
            io.shutdown().await.unwrap();
        });
        conn.await;
        assert_eq!(*rec.writes.lock().unwrap(), vec![b"GOAWAY".to_vec()]);
    }

    #[tokio::test]
    async fn the_stream_comes_back_with_the_bytes_not_yet_sent() {
        // The socket takes 4 bytes, then is full.
        let rec = Recorder {
            room: Some(4),
            ..Recorder::default()
        };
        let (mut io, flusher) = coalesce(rec.clone());
        let mut conn = flusher.around(async move {
            io.write_all(b"GOAWAY frame").await.unwrap();
            std::future::pending::<()>().await
        });
        poll_once(&mut conn).await;
        let (back, unsent) = conn.into_io().expect("no longer shared");
        assert_eq!(*back.writes.lock().unwrap(), vec![b"GOAW".to_vec()]);
        assert_eq!(unsent, b"AY frame");
    }
}
