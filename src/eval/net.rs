//! Small multilayer perceptrons per variant with allocation-free inference and a
//! simple checksummed file format. They are trained by the project's own tools
//! ([`crate::train`]): TD(λ) self-play after Tesauro's TD-Gammon (1992/1995), then
//! supervised fits to positions from self-play labelled by the engine's own search
//! (docs/training.md). Initialisation and the gradient step are training code
//! ([`crate::train::sgd`]).
//!
//! Shape of one [`Net`]: `inputs` ([`InputSet::count`]) → `hidden` ReLU units → 4
//! sigmoid outputs `[win, win_mars, lose_mars, draw]`, all **absolute** probabilities
//! for the side to move before it rolls (a "mars" is any 2-point result, R5.5/R7;
//! `draw` is used in Plakoto only). [`to_probabilities`] clamps them into consistent
//! [`Probabilities`] (`win_mars <= win`, `lose_mars <= lose`, sums ≤ 1).
//!
//! A file holds one [`Nets`]: a net for every position, or a contact net and a race
//! net (no contact, [`has_contact`]) as in GNU Backgammon and wildbg.
//!
//! The weights are stored and trained as `f32`. The evaluator ([`Net::eval_raw`],
//! [`Nets::eval_many`]) runs the first layer in fixed point instead
//! ([`super::first_layer`]): every input is an integer count over a fixed scale, so
//! the hidden sums are exact integers, each board's can start from the previous
//! board's (the plays of one roll), and the result is the same bits either way.
//! Training's forward pass ([`Net::forward`]) stays in `f32`; the two differ by the
//! rounding of the weights (under 10^-3 in an output). Either way the first layer is
//! sparse: each non-zero input adds its weight row (stored input-major, contiguous)
//! to the hidden sums.
//!
//! # File format `.tnet` version 2 (all little-endian)
//!
//! | offset | type | field |
//! |---|---|---|
//! | 0 | `[u8; 4]` | magic `TNET` |
//! | 4 | u32 | version = 2 |
//! | 8 | u32 | variant: 0 Portes, 1 Plakoto, 2 Fevga |
//! | 12 | u32 | generation `g`: the evaluator is named `net-<variant>-v<g>` |
//! | 16 | u32 | number of nets: 1 (every position) or 2 (contact, then race) |
//! | 20 | u32 | reserved, 0 |
//! | 24 | | the nets, one after the other |
//! | end − 4 | u32 | FNV-1a (32 bit) of every byte before it |
//!
//! Each net:
//!
//! | offset | type | field |
//! |---|---|---|
//! | 0 | u32 | role: 0 every position or contact, 1 race |
//! | 4 | u32 | input set ([`InputSet::code`]: 1 V1, 2 V2) |
//! | 8 | u32 | inputs (must equal [`InputSet::count`] for the variant) |
//! | 12 | u32 | hidden (1..=[`MAX_HIDDEN`]) |
//! | 16 | u32 | outputs = 4 |
//! | 20 | u32 | reserved, 0 |
//! | 24 | u64 | games or positions trained (metadata) |
//! | 32 | f32 × inputs·hidden | `w1[j * hidden + h]`: input `j` → hidden `h` |
//! | … | f32 × hidden | `b1` |
//! | … | f32 × 4·hidden | `w2[k * hidden + h]`: hidden `h` → output `k` |
//! | … | f32 × 4 | `b2` |
//!
//! Version 1 (the v1 nets, still read): magic, version = 1, variant, inputs, hidden,
//! outputs = 4 (u32 each), games (u64), then the weights of one V1 net as above and the
//! checksum; it reads as generation 1 with one net.
//!
//! The committed nets live in `weights/<variant>-v<g>.tnet`; those of the current
//! generation are embedded in the binary ([`load_default`]).

use super::features::has_contact;
use super::first_layer::{with_chain, FirstLayer};
use super::inputs::{InputSet, SparseInputs};
use super::kernels::sigmoid;
use super::{Evaluator, Probabilities};
use crate::rules::board::Board;
use crate::rules::Variant;
use std::path::Path;
use std::sync::{Arc, OnceLock};

pub use super::kernels::{MAX_HIDDEN, OUTPUTS};
/// File magic.
pub const MAGIC: [u8; 4] = *b"TNET";
/// File format version written.
pub const VERSION: u32 = 2;
/// The generation of the committed nets: the `N` of `net-<variant>-vN`.
pub const GENERATION: u32 = 2;

/// Errors of [`Nets::from_bytes`] and [`Nets::load`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NetError {
    /// Not a `.tnet` file (magic differs).
    BadMagic,
    /// A version this code does not read.
    UnsupportedVersion(u32),
    /// Variant code other than 0, 1, 2.
    BadVariant(u32),
    /// Layer sizes, roles or input sets that do not fit the variant or the limits.
    BadShape(String),
    /// Fewer or more bytes than the header announces.
    BadLength { expected: usize, found: usize },
    /// The stored FNV-1a checksum does not match the content.
    ChecksumMismatch { stored: u32, computed: u32 },
    /// Weights that are not finite, or first-layer weights too large for the
    /// evaluator's fixed point ([`Net::build_first_layer`]).
    BadWeights(String),
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
            NetError::BadWeights(s) => write!(f, "bad weights: {s}"),
            NetError::Io(s) => write!(f, "i/o error: {s}"),
        }
    }
}

impl std::error::Error for NetError {}

/// FNV-1a, 64 bit: the key of a rollout (`super::rollout::rollout_key`) and the
/// record list of an analysis shard (`tavli-engine analyze --shard`).
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

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

/// One net: weights of both layers and how much training it has had.
#[derive(Clone, Debug, PartialEq)]
pub struct Net {
    /// The variant whose inputs it reads.
    pub variant: Variant,
    /// The encoding it reads.
    pub input_set: InputSet,
    /// Hidden units.
    pub hidden: usize,
    /// `w1[j * hidden + h]`, `input_set.count(variant) × hidden`.
    pub w1: Vec<f32>,
    /// Hidden biases, `hidden`.
    pub b1: Vec<f32>,
    /// `w2[k * hidden + h]`, `OUTPUTS × hidden`.
    pub w2: Vec<f32>,
    /// Output biases.
    pub b2: [f32; OUTPUTS],
    /// Games (TD) or positions (supervised) trained so far (metadata).
    pub games: u64,
    /// The integer form of the first layer that [`Net::eval_raw`] runs, built from
    /// `w1`, `b1` and `w2` on first use: call [`Net::weights_changed`] after changing
    /// them.
    pub first: FirstLayerCache,
}

/// A net's [`FirstLayer`], built on first use (or when a file is read). Not part of
/// the net's value: nets compare equal whether or not theirs is built, and a clone
/// gets a copy of it.
#[derive(Clone, Default)]
pub struct FirstLayerCache(OnceLock<Box<FirstLayer>>);

impl PartialEq for FirstLayerCache {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl std::fmt::Debug for FirstLayerCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.get().is_some() {
            "FirstLayerCache(built)"
        } else {
            "FirstLayerCache(empty)"
        })
    }
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
        self.input_set.count(self.variant)
    }

    /// Encodes `board` for this net.
    #[inline]
    pub fn encode(&self, board: &Board, x: &mut SparseInputs) {
        self.input_set.encode(self.variant, board, x)
    }

    /// Hidden pre-activations into `h[..hidden]` ([`super::kernels::hidden_pre`]).
    #[inline(always)]
    pub(crate) fn hidden_pre(&self, x: &SparseInputs, h: &mut [f32]) {
        super::kernels::hidden_pre(&self.b1, &self.w1, x, h);
    }

    /// Raw sigmoid outputs `[win, win_mars, lose_mars, draw]` for encoded inputs.
    #[inline]
    pub fn forward(&self, x: &SparseInputs) -> [f32; OUTPUTS] {
        // A buffer of the usual size when it fits (zeroing MAX_HIDDEN floats on every
        // evaluation costs more than the outputs).
        if self.hidden <= 128 {
            let mut buf = [0.0f32; 128];
            self.forward_in(x, &mut buf[..self.hidden])
        } else {
            let mut buf = [0.0f32; MAX_HIDDEN];
            self.forward_in(x, &mut buf[..self.hidden])
        }
    }

    /// [`Net::forward`] with `h` (`hidden` floats) for the hidden units.
    #[inline(always)]
    fn forward_in(&self, x: &SparseInputs, h: &mut [f32]) -> [f32; OUTPUTS] {
        self.hidden_pre(x, h);
        super::kernels::outputs(&self.w2, &self.b2, h).map(sigmoid)
    }

    /// Raw outputs for a board (the mover's view, game not over), by the integer
    /// first layer ([`FirstLayer`]: `w1` and `b1` in fixed point with 22 to 24
    /// fractional bits for the committed nets). They differ from [`Net::forward`]'s
    /// float sums by the rounding of the weights: under 10^-3 in every output over
    /// 9,000 positions from random play (3·10^-4 at most in 50,000).
    #[inline]
    pub fn eval_raw(&self, board: &Board) -> [f32; OUTPUTS] {
        with_chain(|c| c.eval(self.first_layer(), board))
    }

    /// Consistent probabilities for a board (the mover's view, game not over).
    #[inline]
    pub fn eval(&self, board: &Board) -> Probabilities {
        to_probabilities(self.variant, self.eval_raw(board))
    }

    /// The integer first layer of this net ([`Net::eval_raw`]), built on first use.
    #[inline]
    pub fn first_layer(&self) -> &FirstLayer {
        self.first.0.get_or_init(|| {
            Box::new(self.build_first_layer().expect(
                "weights not finite or too large for the fixed point (files with such weights \
                 are rejected when read)",
            ))
        })
    }

    /// [`FirstLayer::new`] of this net's weights: `None` when they are not finite or
    /// too large for the fixed point.
    pub fn build_first_layer(&self) -> Option<FirstLayer> {
        FirstLayer::new(
            self.variant,
            self.input_set,
            self.hidden,
            &self.w1,
            &self.b1,
            &self.w2,
            self.b2,
        )
    }

    /// The raw outputs of training's `f32` forward pass ([`Net::forward`]) for a board
    /// (the mover's view, game not over): what TD(λ) self-play evaluates with, as its
    /// net changes after every game. [`Net::eval_raw`] is the evaluator's.
    pub fn eval_raw_f32(&self, board: &Board) -> [f32; OUTPUTS] {
        thread_local! {
            static X: std::cell::RefCell<SparseInputs> = const {
                std::cell::RefCell::new(SparseInputs::EMPTY)
            };
        }
        X.with(|x| {
            let x = &mut *x.borrow_mut();
            self.encode(board, x);
            self.forward(x)
        })
    }

    /// Drops the integer first layer built from the old weights: call it after
    /// changing the weights (`w1`, `b1`, `w2`, `b2`) or the shape fields.
    pub fn weights_changed(&mut self) {
        self.first = FirstLayerCache::default();
    }

    /// Number of weights: `w1`, `b1`, `w2` and `b2` together (the f32 of the file).
    pub(crate) fn floats(&self) -> usize {
        let n = self.inputs();
        n * self.hidden + self.hidden + OUTPUTS * self.hidden + OUTPUTS
    }

    fn write(&self, role: u32, out: &mut Vec<u8>) {
        for v in [
            role,
            self.input_set.code(),
            self.inputs() as u32,
            self.hidden as u32,
            OUTPUTS as u32,
            0,
        ] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(&self.games.to_le_bytes());
        self.write_weights(out);
    }

    fn write_weights(&self, out: &mut Vec<u8>) {
        for w in self
            .w1
            .iter()
            .chain(&self.b1)
            .chain(&self.w2)
            .chain(&self.b2)
        {
            out.extend_from_slice(&w.to_le_bytes());
        }
    }

    /// Reads the weights of a net of this shape from `bytes` (exactly
    /// [`Net::floats`] little-endian f32).
    fn read_weights(
        variant: Variant,
        input_set: InputSet,
        hidden: usize,
        games: u64,
        bytes: &[u8],
    ) -> Net {
        let inputs = input_set.count(variant);
        let mut it = bytes
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes(c.try_into().expect("4 bytes")));
        let mut take = |n: usize| (&mut it).take(n).collect::<Vec<f32>>();
        let w1 = take(inputs * hidden);
        let b1 = take(hidden);
        let w2 = take(OUTPUTS * hidden);
        let b2v = take(OUTPUTS);
        Net {
            variant,
            input_set,
            hidden,
            w1,
            b1,
            w2,
            b2: [b2v[0], b2v[1], b2v[2], b2v[3]],
            games,
            first: FirstLayerCache::default(),
        }
    }
}

/// The nets of one variant as stored in one `.tnet` file: the net for every position
/// (or for contact positions) and an optional race net.
#[derive(Clone, Debug, PartialEq)]
pub struct Nets {
    /// The variant.
    pub variant: Variant,
    /// The `N` of the evaluator name `net-<variant>-vN`.
    pub generation: u32,
    /// The net of every position, or of contact positions when [`Nets::race`] is set.
    pub main: Net,
    /// The net of race positions (no contact, [`has_contact`]), if any.
    pub race: Option<Net>,
}

fn variant_of(code: u32) -> Result<Variant, NetError> {
    match code {
        0 => Ok(Variant::Portes),
        1 => Ok(Variant::Plakoto),
        2 => Ok(Variant::Fevga),
        v => Err(NetError::BadVariant(v)),
    }
}

fn check_shape(
    variant: Variant,
    set: Option<InputSet>,
    set_code: u32,
    inputs: usize,
    hidden: usize,
    outputs: u32,
) -> Result<InputSet, NetError> {
    let set = set.ok_or_else(|| NetError::BadShape(format!("unknown input set {set_code}")))?;
    if inputs != set.count(variant) || !(1..=MAX_HIDDEN).contains(&hidden) || outputs != 4 {
        return Err(NetError::BadShape(format!(
            "{variant}: inputs {inputs} (want {}), hidden {hidden} (1..={MAX_HIDDEN}), \
             outputs {outputs} (want 4)",
            set.count(variant)
        )));
    }
    Ok(set)
}

impl Nets {
    /// One net for every position.
    pub fn single(generation: u32, net: Net) -> Nets {
        Nets {
            variant: net.variant,
            generation,
            main: net,
            race: None,
        }
    }

    /// The net that evaluates `board`: the race net when there is one and the board
    /// has no contact, else the main net.
    #[inline]
    pub fn net_for(&self, board: &Board) -> &Net {
        match &self.race {
            Some(r) if !has_contact(self.variant, board) => r,
            _ => &self.main,
        }
    }

    /// Raw outputs for a board (the mover's view, game not over).
    #[inline]
    pub fn eval_raw(&self, board: &Board) -> [f32; OUTPUTS] {
        self.net_for(board).eval_raw(board)
    }

    /// Consistent probabilities for a board (the mover's view, game not over).
    #[inline]
    pub fn eval(&self, board: &Board) -> Probabilities {
        to_probabilities(self.variant, self.eval_raw(board))
    }

    /// [`Nets::eval`] of each of `boards` into `out` (cleared first), each board's
    /// hidden sums updated from the previous board's when the same net reads both
    /// ([`super::first_layer`]): the same bits as [`Nets::eval`] one by one, with less work for
    /// boards that differ in few inputs (the plays of one roll).
    pub fn eval_many(&self, boards: &[Board], out: &mut Vec<Probabilities>) {
        out.clear();
        with_chain(|c| {
            out.extend(
                boards.iter().map(|b| {
                    to_probabilities(self.variant, c.eval(self.net_for(b).first_layer(), b))
                }),
            );
        })
    }

    /// Serialises to the `.tnet` format, version 2 (see the module docs).
    pub fn to_bytes(&self) -> Vec<u8> {
        let nets: Vec<&Net> = std::iter::once(&self.main).chain(&self.race).collect();
        let mut out =
            Vec::with_capacity(24 + nets.iter().map(|n| 32 + 4 * n.floats()).sum::<usize>() + 4);
        out.extend_from_slice(&MAGIC);
        for v in [
            VERSION,
            variant_code(self.variant),
            self.generation,
            nets.len() as u32,
            0,
        ] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        for (role, n) in nets.iter().enumerate() {
            n.write(role as u32, &mut out);
        }
        let c = fnv1a32(&out);
        out.extend_from_slice(&c.to_le_bytes());
        out
    }

    /// Parses the `.tnet` format (version 2, or version 1 as generation 1); checks
    /// magic, version, shapes, roles, length and checksum.
    pub fn from_bytes(bytes: &[u8]) -> Result<Nets, NetError> {
        let u32_at = |o: usize| u32::from_le_bytes(bytes[o..o + 4].try_into().expect("4 bytes"));
        let u64_at = |o: usize| u64::from_le_bytes(bytes[o..o + 8].try_into().expect("8 bytes"));
        if bytes.len() < 28 {
            return Err(NetError::BadLength {
                expected: 28,
                found: bytes.len(),
            });
        }
        if bytes[..4] != MAGIC {
            return Err(NetError::BadMagic);
        }
        let version = u32_at(4);
        let variant = match version {
            1 | 2 => variant_of(u32_at(8))?,
            v => return Err(NetError::UnsupportedVersion(v)),
        };
        // Walk the layout first (bounds), then check the checksum, then read.
        let mut nets: Vec<(u32, InputSet, usize, u64, usize)> = Vec::new();
        let (generation, end) = if version == 1 {
            if bytes.len() < 36 {
                return Err(NetError::BadLength {
                    expected: 36,
                    found: bytes.len(),
                });
            }
            let (inputs, hidden, outputs) = (u32_at(12) as usize, u32_at(16) as usize, u32_at(20));
            let set = check_shape(variant, Some(InputSet::V1), 1, inputs, hidden, outputs)?;
            nets.push((0, set, hidden, u64_at(24), 32));
            let floats = inputs * hidden + hidden + OUTPUTS * hidden + OUTPUTS;
            (1, 32 + 4 * floats)
        } else {
            let count = u32_at(16);
            if !(1..=2).contains(&count) {
                return Err(NetError::BadShape(format!("{count} nets (want 1 or 2)")));
            }
            let mut at = 24usize;
            for role in 0..count {
                if bytes.len() < at + 32 + 4 {
                    return Err(NetError::BadLength {
                        expected: at + 36,
                        found: bytes.len(),
                    });
                }
                if u32_at(at) != role {
                    return Err(NetError::BadShape(format!(
                        "net {role} has role {} (want {role})",
                        u32_at(at)
                    )));
                }
                let code = u32_at(at + 4);
                let (inputs, hidden, outputs) = (
                    u32_at(at + 8) as usize,
                    u32_at(at + 12) as usize,
                    u32_at(at + 16),
                );
                let set = check_shape(
                    variant,
                    InputSet::from_code(code),
                    code,
                    inputs,
                    hidden,
                    outputs,
                )?;
                nets.push((role, set, hidden, u64_at(at + 24), at + 32));
                at += 32 + 4 * (inputs * hidden + hidden + OUTPUTS * hidden + OUTPUTS);
            }
            (u32_at(12), at)
        };
        let expected = end + 4;
        if bytes.len() != expected {
            return Err(NetError::BadLength {
                expected,
                found: bytes.len(),
            });
        }
        let stored = u32_at(end);
        let computed = fnv1a32(&bytes[..end]);
        if stored != computed {
            return Err(NetError::ChecksumMismatch { stored, computed });
        }
        let read = nets.into_iter().map(|(_, set, hidden, games, at)| {
            let floats = set.count(variant) * hidden + hidden + OUTPUTS * hidden + OUTPUTS;
            Net::read_weights(variant, set, hidden, games, &bytes[at..at + 4 * floats])
        });
        let mut read = read.map(|net| {
            // The evaluator's fixed point, built now: a file it cannot hold is an
            // error here, not a panic at the first evaluation.
            let first = net.build_first_layer().ok_or_else(|| {
                NetError::BadWeights(
                    "not finite, or too large for the evaluator's fixed point".into(),
                )
            })?;
            // The cache is empty: the net was just read.
            let _ = net.first.0.set(Box::new(first));
            Ok(net)
        });
        let main = read.next().expect("at least one net")?;
        let race = read.next().transpose()?;
        Ok(Nets {
            variant,
            generation,
            main,
            race,
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
    pub fn load(path: impl AsRef<Path>) -> Result<Nets, NetError> {
        let bytes = std::fs::read(path).map_err(|e| NetError::Io(e.to_string()))?;
        Nets::from_bytes(&bytes)
    }
}

/// [`Nets`] as an [`Evaluator`], named `net-<variant>-v<generation>`.
#[derive(Clone, Debug)]
pub struct NetEvaluator {
    /// The nets.
    pub nets: Nets,
}

impl NetEvaluator {
    /// Wraps the nets of a file.
    pub fn new(nets: Nets) -> NetEvaluator {
        NetEvaluator { nets }
    }

    /// Wraps one net for every position, as generation `generation`.
    pub fn single(generation: u32, net: Net) -> NetEvaluator {
        NetEvaluator::new(Nets::single(generation, net))
    }
}

impl Evaluator for NetEvaluator {
    /// Net probabilities for the mover of `board`. `variant` must be the nets' own.
    fn eval_board(&self, variant: Variant, board: &Board) -> Probabilities {
        debug_assert_eq!(variant, self.nets.variant, "net of another variant");
        self.nets.eval(board)
    }

    /// [`Nets::eval_many`]: the same bits as `eval_board` one by one.
    fn eval_boards(&self, variant: Variant, boards: &[Board], out: &mut Vec<Probabilities>) {
        debug_assert_eq!(variant, self.nets.variant, "net of another variant");
        self.nets.eval_many(boards, out)
    }

    fn name(&self, variant: Variant) -> String {
        format!("net-{}-v{}", variant.name(), self.nets.generation)
    }
}

/// The committed weights of the current [`GENERATION`], embedded at compile time
/// (empty = not trained yet).
pub fn default_bytes(variant: Variant) -> &'static [u8] {
    match variant {
        Variant::Portes => include_bytes!("../../weights/portes-v2.tnet"),
        Variant::Plakoto => include_bytes!("../../weights/plakoto-v2.tnet"),
        Variant::Fevga => include_bytes!("../../weights/fevga-v2.tnet"),
    }
}

/// The committed nets of `variant` (parsed once), or `None` when no valid net is
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
            Nets::from_bytes(bytes)
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
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x8594_4171_f739_67e8);
    }

    fn floats(set: InputSet, v: Variant, h: usize) -> usize {
        set.count(v) * h + h + 4 * h + 4
    }

    #[test]
    fn file_round_trip_is_bit_identical() {
        let dir = std::env::temp_dir().join(format!("tnet-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for v in Variant::ALL {
            let mut main = Net::new_random(v, InputSet::V2, 24, 7);
            main.games = 12345;
            let race = Net::new_random(v, InputSet::V1, 8, 8);
            let nets = Nets {
                variant: v,
                generation: 2,
                main,
                race: Some(race),
            };
            let path = dir.join(format!("{v}.tnet"));
            nets.save(&path).unwrap();
            let back = Nets::load(&path).unwrap();
            assert_eq!(back, nets);
            let b = start(v);
            let (y1, y2) = (nets.eval_raw(&b), back.eval_raw(&b));
            assert_eq!(y1.map(f32::to_bits), y2.map(f32::to_bits));
            assert_eq!(
                nets.to_bytes().len(),
                24 + 32 + 4 * floats(InputSet::V2, v, 24) + 32 + 4 * floats(InputSet::V1, v, 8) + 4
            );
            std::fs::remove_file(&path).unwrap();
        }
    }

    #[test]
    fn version_1_files_read_as_generation_1() {
        for v in Variant::ALL {
            let bytes = std::fs::read(format!("weights/{}-v1.tnet", v.name())).unwrap();
            let nets = Nets::from_bytes(&bytes).unwrap();
            assert_eq!((nets.variant, nets.generation), (v, 1));
            assert_eq!(nets.main.input_set, InputSet::V1);
            assert!(nets.race.is_none());
            assert_eq!(
                bytes.len(),
                32 + 4 * floats(InputSet::V1, v, nets.main.hidden) + 4
            );
            assert_eq!(
                NetEvaluator::new(nets).name(v),
                format!("net-{}-v1", v.name())
            );
        }
    }

    #[test]
    fn race_net_answers_race_positions_only() {
        let v = Variant::Portes;
        let main = Net::new_random(v, InputSet::V2, 8, 1);
        let race = Net::new_random(v, InputSet::V2, 8, 2);
        let nets = Nets {
            variant: v,
            generation: 2,
            main: main.clone(),
            race: Some(race.clone()),
        };
        let contact = start(v);
        assert_eq!(nets.eval_raw(&contact), main.eval_raw(&contact));
        let pos =
            crate::rules::position_id::from_id("portes/w/6:5,5:5,4:5/19:5,20:5,21:5").unwrap();
        let b = Board::from_position(&pos, Side::White);
        assert_eq!(nets.eval_raw(&b), race.eval_raw(&b));
    }

    #[test]
    fn corrupt_files_are_rejected() {
        let nets = Nets::single(2, Net::new_random(Variant::Portes, InputSet::V2, 8, 1));
        let good = nets.to_bytes();
        let mut bad = good.clone();
        bad[100] ^= 1;
        assert!(matches!(
            Nets::from_bytes(&bad),
            Err(NetError::ChecksumMismatch { .. })
        ));
        let mut bad = good.clone();
        bad[0] = b'X';
        assert_eq!(Nets::from_bytes(&bad), Err(NetError::BadMagic));
        let mut bad = good.clone();
        bad[4] = 3;
        assert_eq!(Nets::from_bytes(&bad), Err(NetError::UnsupportedVersion(3)));
        let mut bad = good.clone();
        bad[28] = 9; // input set code of the first net
        assert!(matches!(Nets::from_bytes(&bad), Err(NetError::BadShape(_))));
        let mut bad = good.clone();
        bad[16] = 3; // three nets
        assert!(matches!(Nets::from_bytes(&bad), Err(NetError::BadShape(_))));
        assert!(matches!(
            Nets::from_bytes(&good[..good.len() - 8]),
            Err(NetError::BadLength { .. })
        ));
        assert!(matches!(
            Nets::from_bytes(&good[..20]),
            Err(NetError::BadLength { .. })
        ));
        assert_eq!(Nets::from_bytes(&good), Ok(nets));
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
                assert_eq!(e.nets.variant, v);
                assert_eq!(e.name(v), format!("net-{}-v{GENERATION}", v.name()));
                let p = e.eval_board(v, &start(v));
                assert!(p.win > 0.2 && p.win < 0.8, "{v}: {p:?}");
                assert!(p.win_mars <= p.win && p.lose_mars <= p.lose());
            }
        }
    }
}
