//! Compressed requests under the limits of the buffers (issues #11 and #13).
//!
//! Requests compressed with gzip or zstd (`grpc-encoding`) are accepted on every
//! service. A compressed engine request is inflated here, in admission, right after
//! its body has been read ([`super::limits`]), instead of by tonic:
//!
//! - the inflated message may be at most `--max-message-bytes`: one that inflates
//!   past it is refused (`OUT_OF_RANGE`) as soon as the limit is passed, so a small
//!   body cannot make the server inflate (and hold) more than the limit;
//! - the inflated bytes are charged to the buffers ([`super::buffers`]: the server's
//!   budget and the connection's share) as they are produced, like an uncompressed
//!   body; when they do not fit the request is `RESOURCE_EXHAUSTED`;
//! - a zstd frame may not ask for a window larger than 8 MiB (the window RFC 8878
//!   §3.1.1.1.2 recommends decoders to support; what zstd's levels 1 to 19 use), or
//!   the message limit rounded up to a power of two when that is larger: a few bytes
//!   declaring a 128 MiB window (zstd's default limit) would otherwise make the
//!   decoder allocate it. A decoder lives only while a worker thread inflates
//!   (inflating never waits), so at most one per runtime thread exists at once.
//!
//! The request then goes on uncompressed (compression flag 0, no `grpc-encoding`):
//! tonic decodes it as any other. tonic would also have bounded the inflated size
//! by the message limit, but without charging it to the buffers (a 4 KiB body
//! inflating to 4 MiB, times the concurrency limit) and with zstd's default window
//! limit (128 MiB). Other encodings are left to tonic (`UNIMPLEMENTED`, with the
//! accepted ones in `grpc-accept-encoding`); so are health and reflection, whose
//! own message limit ([`super::server::SMALL_MESSAGE_BYTES`]) bounds what tonic
//! inflates for them.

use super::buffers::{buffers_full, Budget, Charge};
use super::conn::ConnState;
use bytes::Bytes;
use std::io::{self, Read, Write};
use std::sync::Arc;
use tonic::Status;

/// A request encoding inflated here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// `grpc-encoding: gzip` (RFC 1952).
    Gzip,
    /// `grpc-encoding: zstd` (RFC 8878).
    Zstd,
}

impl Encoding {
    /// The encoding of a request from its `grpc-encoding` header: `None` for none,
    /// `identity`, or an encoding left to tonic.
    pub fn of(headers: &http::HeaderMap) -> Option<Encoding> {
        match headers.get("grpc-encoding")?.as_bytes() {
            b"gzip" => Some(Encoding::Gzip),
            b"zstd" => Some(Encoding::Zstd),
            _ => None,
        }
    }
}

/// Why inflating failed.
#[derive(Debug)]
enum Fail {
    TooLarge,
    Buffers,
}

/// The inflated messages, written into a buffer whose growth is charged first.
struct Sink<'a> {
    out: Vec<u8>,
    /// Largest `out.len()` allowed.
    limit: usize,
    /// Bytes of `out`'s capacity charged so far.
    charged: usize,
    charge: &'a mut Charge,
    fail: Option<Fail>,
}

impl Sink<'_> {
    /// Makes room for `n` more bytes, charging the growth of the buffer.
    fn reserve(&mut self, n: usize) -> io::Result<()> {
        let need = self.out.len() + n;
        if need > self.limit {
            self.fail = Some(Fail::TooLarge);
            return Err(io::ErrorKind::WriteZero.into());
        }
        if need > self.out.capacity() {
            let target = need.max(self.out.capacity() * 2).min(self.limit);
            self.out.reserve_exact(target - self.out.len());
            let grown = self.out.capacity().saturating_sub(self.charged);
            if !self.charge.try_grow(grown) {
                self.fail = Some(Fail::Buffers);
                return Err(io::ErrorKind::WriteZero.into());
            }
            self.charged += grown;
        }
        Ok(())
    }
}

impl Write for Sink<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.reserve(buf.len())?;
        self.out.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The largest zstd window log accepted: 23 (8 MiB), or the smallest whose window
/// holds `max_message` bytes when that is larger, at most 27 (zstd's default limit).
fn zstd_window_log(max_message: usize) -> u32 {
    let log = usize::BITS - max_message.max(1).saturating_sub(1).leading_zeros();
    log.clamp(23, 27)
}

/// Inflates one message into `sink`.
fn inflate_one(
    encoding: Encoding,
    data: &[u8],
    max_message: usize,
    sink: &mut Sink,
) -> io::Result<()> {
    let reader: Box<dyn Read + '_> = match encoding {
        Encoding::Gzip => Box::new(flate2::read::GzDecoder::new(data)),
        Encoding::Zstd => {
            let mut d = zstd::stream::read::Decoder::with_buffer(data)?;
            d.window_log_max(zstd_window_log(max_message))?;
            Box::new(d)
        }
    };
    io::copy(&mut { reader }, sink).map(|_| ())
}

/// Inflates the compressed messages of a request body (gRPC length-prefixed
/// messages: a flag byte, 1 for compressed, a 4-byte big-endian length, the bytes)
/// into the same messages uncompressed (flag 0). The messages together may inflate
/// to at most `max_message` bytes; the inflated body is charged to `charge` as it
/// grows (the caller keeps the charge as long as the body). A body that does not
/// parse as whole messages (cut short, a flag other than 0 and 1) is left as it is
/// from the first such byte on, for tonic to refuse.
///
/// Errors: `OUT_OF_RANGE` when the messages inflate past `max_message` bytes,
/// `RESOURCE_EXHAUSTED` when the buffers are full, `INTERNAL` for data that is not
/// valid gzip or zstd (tonic's answer to it).
pub fn inflate_body(
    body: &[u8],
    encoding: Encoding,
    max_message: usize,
    charge: &mut Charge,
) -> Result<Bytes, Status> {
    let mut sink = Sink {
        out: Vec::new(),
        limit: usize::MAX,
        charged: 0,
        charge,
        fail: None,
    };
    let mut inflated = 0usize;
    let mut rest = body;
    while rest.len() >= 5 && rest[0] <= 1 {
        let len = u32::from_be_bytes([rest[1], rest[2], rest[3], rest[4]]) as usize;
        if rest.len() - 5 < len {
            break;
        }
        let (data, tail) = (&rest[5..5 + len], &rest[5 + len..]);
        let at = sink.out.len();
        let prefix = [0u8; 5];
        sink.limit = usize::MAX;
        sink.write_all(&prefix)
            .map_err(|_| fail_status(&sink, max_message))?;
        if rest[0] == 0 {
            inflated += len;
            sink.write_all(data)
                .map_err(|_| fail_status(&sink, max_message))?;
        } else {
            sink.limit = at + 5 + max_message.saturating_sub(inflated);
            if let Err(e) = inflate_one(encoding, data, max_message, &mut sink) {
                return Err(match sink.fail {
                    Some(_) => fail_status(&sink, max_message),
                    None => {
                        Status::internal(format!("Error decompressing: {e}, while sending request"))
                    }
                });
            }
            inflated += sink.out.len() - at - 5;
        }
        if inflated > max_message {
            sink.fail = Some(Fail::TooLarge);
            return Err(fail_status(&sink, max_message));
        }
        let n = (sink.out.len() - at - 5) as u32;
        sink.out[at + 1..at + 5].copy_from_slice(&n.to_be_bytes());
        rest = tail;
    }
    if !rest.is_empty() {
        sink.limit = usize::MAX;
        sink.write_all(rest)
            .map_err(|_| fail_status(&sink, max_message))?;
    }
    Ok(Bytes::from(sink.out))
}

/// [`inflate_body`] with a new charge to `budget` and the connection `conn`, which
/// the caller keeps with the body (the compressed body and its charge can go).
pub fn inflate_request(
    body: &[u8],
    encoding: Encoding,
    max_message: usize,
    budget: &Arc<Budget>,
    conn: Option<&Arc<ConnState>>,
) -> Result<(Bytes, Charge), Status> {
    let mut charge = Charge::try_new(budget, conn, 0, false).ok_or_else(buffers_full)?;
    let body = inflate_body(body, encoding, max_message, &mut charge)?;
    Ok((body, charge))
}

fn fail_status(sink: &Sink, max_message: usize) -> Status {
    match sink.fail {
        Some(Fail::Buffers) => buffers_full(),
        _ => Status::out_of_range(format!(
            "Error, decompressed message length too large: more than {max_message} bytes, \
             the limit is: {max_message} bytes"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(flag: u8, data: &[u8]) -> Vec<u8> {
        let mut f = vec![flag];
        f.extend_from_slice(&(data.len() as u32).to_be_bytes());
        f.extend_from_slice(data);
        f
    }

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn inflate(
        body: &[u8],
        enc: Encoding,
        max: usize,
        budget: &Arc<Budget>,
    ) -> Result<(Bytes, Charge), Status> {
        inflate_request(body, enc, max, budget, None)
    }

    /// A gzip and a zstd message come out as the same message uncompressed (flag
    /// 0), the inflated bytes charged to the budget until the charge is dropped.
    #[test]
    fn messages_are_inflated_and_charged() {
        let msg: Vec<u8> = (0..20_000u32).map(|i| (i % 7) as u8).collect();
        let budget = Budget::new(1 << 20);
        for (enc, packed) in [
            (Encoding::Gzip, gzip(&msg)),
            (Encoding::Zstd, zstd::encode_all(&msg[..], 3).unwrap()),
        ] {
            assert!(packed.len() < 1000, "{enc:?}: {}", packed.len());
            let (out, charge) = inflate(&frame(1, &packed), enc, 65536, &budget).unwrap();
            assert_eq!(&out[..], &frame(0, &msg)[..], "{enc:?}");
            assert!(
                budget.used() >= msg.len() + 5 && budget.used() <= 2 * (msg.len() + 5),
                "{enc:?}: {}",
                budget.used()
            );
            drop(charge);
            assert_eq!(budget.used(), 0);
        }
    }

    /// A few hundred bytes of gzip that inflate past the message limit are refused
    /// when the limit is passed (`OUT_OF_RANGE`), holding no more than the limit.
    #[test]
    fn a_message_inflating_past_the_limit_is_refused() {
        let bomb = gzip(&vec![0u8; 1 << 20]);
        assert!(bomb.len() < 2000, "{}", bomb.len());
        let budget = Budget::new(1 << 20);
        let e = inflate(&frame(1, &bomb), Encoding::Gzip, 4096, &budget).unwrap_err();
        assert_eq!(e.code(), tonic::Code::OutOfRange);
        assert_eq!(
            e.message(),
            "Error, decompressed message length too large: more than 4096 bytes, the limit is: 4096 bytes"
        );
        assert_eq!(budget.used(), 0);
        // Several messages: their sum counts.
        let two = [frame(1, &gzip(&[1u8; 3000])), frame(1, &gzip(&[2u8; 3000]))].concat();
        let e = inflate(&two, Encoding::Gzip, 4096, &budget).unwrap_err();
        assert_eq!(e.code(), tonic::Code::OutOfRange);
    }

    /// Inflated bytes that do not fit the buffers are `RESOURCE_EXHAUSTED`.
    #[test]
    fn inflated_bytes_must_fit_the_buffers() {
        let budget = Budget::new(2000);
        let packed = gzip(&[5u8; 8000]);
        let e = inflate(&frame(1, &packed), Encoding::Gzip, 65536, &budget).unwrap_err();
        assert_eq!(e.code(), tonic::Code::ResourceExhausted);
        assert_eq!(e.message(), buffers_full().message());
        assert_eq!(budget.used(), 0);
    }

    /// A 10-byte zstd frame declaring a large window (no content size) is refused
    /// by the window limit, not given a buffer of that size;
    /// data that is not zstd or gzip is tonic's `INTERNAL`.
    #[test]
    fn zstd_windows_are_bounded_and_bad_data_refused() {
        // Magic, descriptor (no content size, not single-segment), window log
        // 10 + exponent, one last raw block of 1 byte.
        let zstd_frame = |log: u8| {
            [
                0x28,
                0xB5,
                0x2F,
                0xFD,
                0x00,
                (log - 10) << 3,
                0x09,
                0x00,
                0x00,
                b'x',
            ]
        };
        let budget = Budget::new(1 << 20);
        // An 8 MiB window is read whatever the message limit...
        for max in [1024, 4 << 20] {
            let (out, _c) =
                inflate(&frame(1, &zstd_frame(23)), Encoding::Zstd, max, &budget).unwrap();
            assert_eq!(&out[..], &frame(0, b"x")[..]);
        }
        // ... a 16 MiB one only with a message limit over 8 MiB; never a 128 MiB
        // one (zstd's own default limit) with the default 4 MiB limit.
        let (out, _c) = inflate(
            &frame(1, &zstd_frame(24)),
            Encoding::Zstd,
            16 << 20,
            &budget,
        )
        .unwrap();
        assert_eq!(&out[..], &frame(0, b"x")[..]);
        for (log, max) in [(24, 4 << 20), (27, 4 << 20), (27, 64 << 20)] {
            let e = inflate(&frame(1, &zstd_frame(log)), Encoding::Zstd, max, &budget).unwrap_err();
            assert_eq!(e.code(), tonic::Code::Internal);
            assert!(
                e.message().starts_with("Error decompressing: ")
                    && e.message()
                        .contains("Frame requires too much memory for decoding"),
                "{}",
                e.message()
            );
        }
        for enc in [Encoding::Gzip, Encoding::Zstd] {
            let e = inflate(&frame(1, b"not compressed"), enc, 4096, &budget).unwrap_err();
            assert_eq!(e.code(), tonic::Code::Internal, "{enc:?}");
            assert!(
                e.message().ends_with(", while sending request"),
                "{}",
                e.message()
            );
        }
        assert_eq!(zstd_window_log(4 << 20), 23);
        assert_eq!(zstd_window_log((8 << 20) + 1), 24);
        assert_eq!(zstd_window_log(64 << 20), 26);
        assert_eq!(zstd_window_log(1), 23);
    }

    /// Uncompressed messages pass as they are; bytes that do not make a whole
    /// message (cut short, a bad flag) are kept as they are for tonic to refuse.
    #[test]
    fn other_bytes_are_kept() {
        let budget = Budget::new(1 << 20);
        let plain = frame(0, b"abc");
        let (out, _c) = inflate(&plain, Encoding::Gzip, 4096, &budget).unwrap();
        assert_eq!(&out[..], &plain[..]);
        let cut = [frame(1, &gzip(b"hello")), vec![1, 0, 0, 0, 9, 1]].concat();
        let (out, _c) = inflate(&cut, Encoding::Gzip, 4096, &budget).unwrap();
        assert_eq!(
            &out[..],
            &[frame(0, b"hello"), vec![1, 0, 0, 0, 9, 1]].concat()[..]
        );
        let flag = [vec![2u8, 0, 0, 0, 1, 7], frame(1, &gzip(b"x"))].concat();
        let (out, _c) = inflate(&flag, Encoding::Gzip, 4096, &budget).unwrap();
        assert_eq!(&out[..], &flag[..]);
    }
}
