//! A small multilayer perceptron per variant, trained by TD(λ) self-play
//! ([`crate::train::td`], after Tesauro's TD-Gammon, 1992/1995), with allocation-free f32
//! inference and a simple checksummed file format. Initialisation and the gradient
//! step are training code: [`crate::train::sgd`].
//!
//! Shape: `inputs` ([`num_inputs`]) → `hidden` ReLU units → 4 sigmoid outputs
//! `[win, win_mars, lose_mars, draw]`, all **absolute** probabilities for the side to
//! move before it rolls (a "mars" is any 2-point result, R5.5/R7; `draw` is used in
//! Plakoto only). [`to_probabilities`] clamps them into consistent
//! [`Probabilities`] (`win_mars <= win`, `lose_mars <= lose`, sums ≤ 1).
//!
//! The first layer is evaluated sparsely: each non-zero input adds its weight column
//! (stored input-major, contiguous) to the hidden sums.
//!
//! # File format `.tnet` (version 1, all little-endian)
//!
//! | offset | type | field |
//! |---|---|---|
//! | 0 | `[u8; 4]` | magic `TNET` |
//! | 4 | u32 | version = 1 |
//! | 8 | u32 | variant: 0 Portes, 1 Plakoto, 2 Fevga |
//! | 12 | u32 | inputs (must equal [`num_inputs`] of the variant) |
//! | 16 | u32 | hidden (1..=[`MAX_HIDDEN`]) |
//! | 20 | u32 | outputs = 4 |
//! | 24 | u64 | self-play games trained |
//! | 32 | f32 × inputs·hidden | `w1[j * hidden + h]`: input `j` → hidden `h` |
//! | … | f32 × hidden | `b1` |
//! | … | f32 × 4·hidden | `w2[k * hidden + h]`: hidden `h` → output `k` |
//! | … | f32 × 4 | `b2` |
//! | end − 4 | u32 | FNV-1a (32 bit) of every byte before it |
//!
//! The committed nets live in `weights/<variant>-v1.tnet` and are embedded in the
//! binary ([`load_default`]); an empty file there means "no trained net".

use super::inputs::{encode, num_inputs, SparseInputs};
use super::{Evaluator, Probabilities};
use crate::rules::board::Board;
use crate::rules::Variant;
use std::path::Path;
use std::sync::{Arc, OnceLock};

/// Number of outputs: win, win_mars, lose_mars, draw.
pub const OUTPUTS: usize = 4;
/// The largest hidden layer accepted (stack buffers are this size).
pub const MAX_HIDDEN: usize = 256;
/// File magic.
pub const MAGIC: [u8; 4] = *b"TNET";
/// File format version.
pub const VERSION: u32 = 1;
const HEADER: usize = 32;

/// Errors of [`Net::from_bytes`] and [`Net::load`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NetError {
    /// Not a `.tnet` file (magic differs).
    BadMagic,
    /// A version this code does not read.
    UnsupportedVersion(u32),
    /// Variant code other than 0, 1, 2.
    BadVariant(u32),
    /// Layer sizes that do not fit the variant or the limits.
    BadShape(String),
    /// Fewer or more bytes than the header announces.
    BadLength { expected: usize, found: usize },
    /// The stored FNV-1a checksum does not match the content.
    ChecksumMismatch { stored: u32, computed: u32 },
    /// Reading or writing the file failed.
    Io(String),
}

impl std::fmt::Display for NetError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NetError::BadMagic => f.write_str("not a tnet file (bad magic)"),
            NetError::UnsupportedVersion(v) => write!(f, "unsupported tnet version {v}"),
            NetError::BadVariant(v) => write!(f, "bad variant code {v}"),
            NetError::BadShape(s) => write!(f, "bad layer sizes: {s}"),
            NetError::BadLength { expected, found } => {
                write!(f, "bad length: expected {expected} bytes, found {found}")
            }
            NetError::ChecksumMismatch { stored, computed } => write!(
                f,
                "checksum mismatch: stored {stored:#010x}, computed {computed:#010x}"
            ),
            NetError::Io(s) => write!(f, "i/o error: {s}"),
        }
    }
}

impl std::error::Error for NetError {}

/// FNV-1a, 32 bit.
pub fn fnv1a32(bytes: &[u8]) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for &b in bytes {
        h ^= b as u32;
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

fn variant_code(v: Variant) -> u32 {
    match v {
        Variant::Portes => 0,
        Variant::Plakoto => 1,
        Variant::Fevga => 2,
    }
}

/// The net: weights of both layers and how many self-play games trained it.
#[derive(Clone, Debug, PartialEq)]
pub struct Net {
    /// The variant whose inputs it reads.
    pub variant: Variant,
    /// Hidden units.
    pub hidden: usize,
    /// `w1[j * hidden + h]`, `num_inputs(variant) × hidden`.
    pub w1: Vec<f32>,
    /// Hidden biases, `hidden`.
    pub b1: Vec<f32>,
    /// `w2[k * hidden + h]`, `OUTPUTS × hidden`.
    pub w2: Vec<f32>,
    /// Output biases.
    pub b2: [f32; OUTPUTS],
    /// Self-play games trained so far (metadata).
    pub games: u64,
}

#[inline(always)]
pub(crate) fn sigmoid(z: f32) -> f32 {
    1.0 / (1.0 + (-z).exp())
}

/// Dot product with 8 independent accumulators (so the compiler vectorises it).
#[inline(always)]
pub(crate) fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0.0f32; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for k in 0..8 {
            acc[k] += x[k] * y[k];
        }
    }
    let mut s: f32 = acc.iter().sum();
    for (x, y) in ra.iter().zip(rb) {
        s += x * y;
    }
    s
}

/// Consistent [`Probabilities`] from the raw outputs `[win, win_mars, lose_mars,
/// draw]`: the draw is dropped outside Plakoto, then `win <= 1 - draw`,
/// `win_mars <= win`, `lose_mars <= 1 - win - draw`.
pub fn to_probabilities(variant: Variant, y: [f32; OUTPUTS]) -> Probabilities {
    let draw = if variant == Variant::Plakoto {
        y[3].clamp(0.0, 1.0)
    } else {
        0.0
    };
    let win = y[0].clamp(0.0, 1.0 - draw);
    let win_mars = y[1].clamp(0.0, win);
    let lose_mars = y[2].clamp(0.0, (1.0 - win - draw).max(0.0));
    Probabilities {
        win,
        win_mars,
        lose_mars,
        draw,
    }
}

impl Net {
    /// Number of inputs.
    pub fn inputs(&self) -> usize {
        num_inputs(self.variant)
    }

    /// Hidden pre-activations into `h[..hidden]`.
    #[inline(always)]
    pub(crate) fn hidden_pre(&self, x: &SparseInputs, h: &mut [f32]) {
        let hn = self.hidden;
        h.copy_from_slice(&self.b1);
        for (j, v) in x.iter() {
            let col = &self.w1[j * hn..(j + 1) * hn];
            for (a, &w) in h.iter_mut().zip(col) {
                *a += v * w;
            }
        }
    }

    /// Raw sigmoid outputs `[win, win_mars, lose_mars, draw]` for encoded inputs.
    #[inline]
    pub fn forward(&self, x: &SparseInputs) -> [f32; OUTPUTS] {
        let mut buf = [0.0f32; MAX_HIDDEN];
        let h = &mut buf[..self.hidden];
        self.hidden_pre(x, h);
        for a in h.iter_mut() {
            *a = a.max(0.0);
        }
        let mut y = [0.0; OUTPUTS];
        for (k, yk) in y.iter_mut().enumerate() {
            let w = &self.w2[k * self.hidden..(k + 1) * self.hidden];
            *yk = sigmoid(self.b2[k] + dot(w, h));
        }
        y
    }

    /// Raw outputs for a board (the mover's view, game not over).
    #[inline]
    pub fn eval_raw(&self, board: &Board) -> [f32; OUTPUTS] {
        let mut x = SparseInputs::default();
        encode(self.variant, board, &mut x);
        self.forward(&x)
    }

    /// Consistent probabilities for a board (the mover's view, game not over).
    #[inline]
    pub fn eval(&self, board: &Board) -> Probabilities {
        to_probabilities(self.variant, self.eval_raw(board))
    }

    /// Serialises to the `.tnet` format (see the module docs).
    pub fn to_bytes(&self) -> Vec<u8> {
        let n = self.inputs();
        let floats = n * self.hidden + self.hidden + OUTPUTS * self.hidden + OUTPUTS;
        let mut out = Vec::with_capacity(HEADER + 4 * floats + 4);
        out.extend_from_slice(&MAGIC);
        for v in [
            VERSION,
            variant_code(self.variant),
            n as u32,
            self.hidden as u32,
            OUTPUTS as u32,
        ] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(&self.games.to_le_bytes());
        for w in self
            .w1
            .iter()
            .chain(&self.b1)
            .chain(&self.w2)
            .chain(&self.b2)
        {
            out.extend_from_slice(&w.to_le_bytes());
        }
        let c = fnv1a32(&out);
        out.extend_from_slice(&c.to_le_bytes());
        out
    }

    /// Parses the `.tnet` format; checks magic, version, shapes, length and checksum.
    pub fn from_bytes(bytes: &[u8]) -> Result<Net, NetError> {
        let u32_at = |o: usize| u32::from_le_bytes(bytes[o..o + 4].try_into().unwrap());
        if bytes.len() < HEADER + 4 {
            return Err(NetError::BadLength {
                expected: HEADER + 4,
                found: bytes.len(),
            });
        }
        if bytes[..4] != MAGIC {
            return Err(NetError::BadMagic);
        }
        let version = u32_at(4);
        if version != VERSION {
            return Err(NetError::UnsupportedVersion(version));
        }
        let variant = match u32_at(8) {
            0 => Variant::Portes,
            1 => Variant::Plakoto,
            2 => Variant::Fevga,
            v => return Err(NetError::BadVariant(v)),
        };
        let (inputs, hidden, outputs) = (u32_at(12) as usize, u32_at(16) as usize, u32_at(20));
        if inputs != num_inputs(variant) || !(1..=MAX_HIDDEN).contains(&hidden) || outputs != 4 {
            return Err(NetError::BadShape(format!(
                "{variant}: inputs {inputs} (want {}), hidden {hidden} (1..={MAX_HIDDEN}), \
                 outputs {outputs} (want 4)",
                num_inputs(variant)
            )));
        }
        let floats = inputs * hidden + hidden + OUTPUTS * hidden + OUTPUTS;
        let expected = HEADER + 4 * floats + 4;
        if bytes.len() != expected {
            return Err(NetError::BadLength {
                expected,
                found: bytes.len(),
            });
        }
        let stored = u32_at(expected - 4);
        let computed = fnv1a32(&bytes[..expected - 4]);
        if stored != computed {
            return Err(NetError::ChecksumMismatch { stored, computed });
        }
        let games = u64::from_le_bytes(bytes[24..32].try_into().unwrap());
        let mut it = bytes[HEADER..expected - 4]
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes(c.try_into().unwrap()));
        let mut take = |n: usize| (&mut it).take(n).collect::<Vec<f32>>();
        let w1 = take(inputs * hidden);
        let b1 = take(hidden);
        let w2 = take(OUTPUTS * hidden);
        let b2v = take(OUTPUTS);
        Ok(Net {
            variant,
            hidden,
            w1,
            b1,
            w2,
            b2: [b2v[0], b2v[1], b2v[2], b2v[3]],
            games,
        })
    }

    /// Writes the `.tnet` file (via a temporary file and a rename).
    pub fn save(&self, path: impl AsRef<Path>) -> Result<(), NetError> {
        let path = path.as_ref();
        let tmp = path.with_extension("tnet.tmp");
        std::fs::write(&tmp, self.to_bytes()).map_err(|e| NetError::Io(e.to_string()))?;
        std::fs::rename(&tmp, path).map_err(|e| NetError::Io(e.to_string()))
    }

    /// Reads a `.tnet` file.
    pub fn load(path: impl AsRef<Path>) -> Result<Net, NetError> {
        let bytes = std::fs::read(path).map_err(|e| NetError::Io(e.to_string()))?;
        Net::from_bytes(&bytes)
    }
}

/// A [`Net`] as an [`Evaluator`], named `net-<variant>-v1`.
#[derive(Clone, Debug)]
pub struct NetEvaluator {
    /// The net.
    pub net: Net,
}

impl NetEvaluator {
    /// Wraps a net.
    pub fn new(net: Net) -> NetEvaluator {
        NetEvaluator { net }
    }
}

impl Evaluator for NetEvaluator {
    /// Net probabilities for the mover of `board`. `variant` must be the net's own.
    fn eval_board(&self, variant: Variant, board: &Board) -> Probabilities {
        debug_assert_eq!(variant, self.net.variant, "net of another variant");
        self.net.eval(board)
    }

    fn name(&self, variant: Variant) -> String {
        format!("net-{}-v1", variant.name())
    }
}

/// The committed weights, embedded at compile time (empty = not trained yet).
pub fn default_bytes(variant: Variant) -> &'static [u8] {
    match variant {
        Variant::Portes => include_bytes!("../../weights/portes-v1.tnet"),
        Variant::Plakoto => include_bytes!("../../weights/plakoto-v1.tnet"),
        Variant::Fevga => include_bytes!("../../weights/fevga-v1.tnet"),
    }
}

/// The committed net of `variant` (parsed once), or `None` when no valid net is
/// embedded.
pub fn load_default(variant: Variant) -> Option<Arc<NetEvaluator>> {
    static CACHE: [OnceLock<Option<Arc<NetEvaluator>>>; 3] =
        [OnceLock::new(), OnceLock::new(), OnceLock::new()];
    CACHE[variant_code(variant) as usize]
        .get_or_init(|| {
            let bytes = default_bytes(variant);
            if bytes.is_empty() {
                return None;
            }
            Net::from_bytes(bytes)
                .ok()
                .filter(|n| n.variant == variant)
                .map(|n| Arc::new(NetEvaluator::new(n)))
        })
        .clone()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::{Position, Side};

    fn start(v: Variant) -> Board {
        Board::from_position(&Position::start(v, Side::White), Side::White)
    }

    #[test]
    fn fnv_known_values() {
        assert_eq!(fnv1a32(b""), 0x811c_9dc5);
        assert_eq!(fnv1a32(b"a"), 0xe40c_292c);
        assert_eq!(fnv1a32(b"foobar"), 0xbf9c_f968);
    }

    #[test]
    fn file_round_trip_is_bit_identical() {
        for v in Variant::ALL {
            let mut net = Net::new_random(v, 24, 7);
            net.games = 12345;
            let dir = std::env::temp_dir().join(format!("tnet-test-{}", std::process::id()));
            std::fs::create_dir_all(&dir).unwrap();
            let path = dir.join(format!("{v}.tnet"));
            net.save(&path).unwrap();
            let back = Net::load(&path).unwrap();
            assert_eq!(back, net);
            let b = start(v);
            let (y1, y2) = (net.eval_raw(&b), back.eval_raw(&b));
            assert_eq!(y1.map(f32::to_bits), y2.map(f32::to_bits));
            assert_eq!(
                net.to_bytes().len(),
                32 + 4 * (num_inputs(v) * 24 + 24 + 4 * 24 + 4) + 4
            );
            std::fs::remove_file(&path).unwrap();
        }
    }

    #[test]
    fn corrupt_files_are_rejected() {
        let net = Net::new_random(Variant::Portes, 8, 1);
        let good = net.to_bytes();
        let mut bad = good.clone();
        bad[100] ^= 1;
        assert!(matches!(
            Net::from_bytes(&bad),
            Err(NetError::ChecksumMismatch { .. })
        ));
        let mut bad = good.clone();
        bad[0] = b'X';
        assert_eq!(Net::from_bytes(&bad), Err(NetError::BadMagic));
        let mut bad = good.clone();
        bad[4] = 2;
        assert_eq!(Net::from_bytes(&bad), Err(NetError::UnsupportedVersion(2)));
        assert!(matches!(
            Net::from_bytes(&good[..good.len() - 8]),
            Err(NetError::BadLength { .. })
        ));
        assert!(Net::from_bytes(&good).is_ok());
    }

    #[test]
    fn probabilities_are_consistent() {
        let p = to_probabilities(Variant::Plakoto, [0.9, 0.95, 0.3, 0.2]);
        assert_eq!(p.draw, 0.2);
        assert_eq!(p.win, 0.8);
        assert_eq!(p.win_mars, 0.8);
        assert_eq!(p.lose_mars, 0.0);
        let p = to_probabilities(Variant::Portes, [0.6, 0.1, 0.5, 0.9]);
        assert_eq!(p.draw, 0.0);
        assert_eq!(p.win, 0.6);
        assert!((p.lose_mars - 0.4).abs() < 1e-6);
    }

    #[test]
    fn embedded_nets_parse_when_present() {
        for v in Variant::ALL {
            if !default_bytes(v).is_empty() {
                let e = load_default(v).expect("embedded net parses");
                assert_eq!(e.net.variant, v);
                assert_eq!(e.name(v), format!("net-{}-v1", v.name()));
                let p = e.eval_board(v, &start(v));
                assert!(p.win > 0.2 && p.win < 0.8, "{v}: {p:?}");
                assert!(p.win_mars <= p.win && p.lose_mars <= p.lose());
            }
        }
    }
}
