//! Training data files: positions from self-play, optionally with their labels.
//!
//! A scratch format of the training tools (not read by the server), little-endian:
//!
//! | offset | type | field |
//! |---|---|---|
//! | 0 | `[u8; 4]` | magic `TPOS` |
//! | 4 | u32 | version = 1 |
//! | 8 | u32 | variant: 0 Portes, 1 Plakoto, 2 Fevga |
//! | 12 | u32 | 1 when every record has a label, else 0 |
//! | 16 | u64 | number of records |
//! | 24 | records | |
//!
//! A record is a mover-relative [`Board`] (`own[0..26]`, `opp[0..26]` as u8,
//! `own_pinned`, `opp_pinned` as u32: 60 bytes), then with labels the target
//! `[win, win_mars, lose_mars, draw]` of the mover as 4 × f32 (16 bytes).

use crate::rules::board::Board;
use crate::rules::Variant;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::Path;

const MAGIC: [u8; 4] = *b"TPOS";
const BOARD_BYTES: usize = 60;

/// A target of the four net outputs, mover's view.
pub type Target = [f32; 4];

/// A set of positions of one variant, with labels or without.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DataSet {
    /// The variant, `None` when empty and unset.
    pub variant: Option<Variant>,
    /// Mover-relative boards (mover to roll, game not over).
    pub boards: Vec<Board>,
    /// One target per board, or empty when unlabelled.
    pub targets: Vec<Target>,
}

fn code(v: Variant) -> u32 {
    match v {
        Variant::Portes => 0,
        Variant::Plakoto => 1,
        Variant::Fevga => 2,
    }
}

fn variant_of(c: u32) -> std::io::Result<Variant> {
    match c {
        0 => Ok(Variant::Portes),
        1 => Ok(Variant::Plakoto),
        2 => Ok(Variant::Fevga),
        _ => Err(std::io::Error::other(format!("bad variant code {c}"))),
    }
}

impl DataSet {
    /// An empty set of `variant`.
    pub fn new(variant: Variant) -> DataSet {
        DataSet {
            variant: Some(variant),
            ..DataSet::default()
        }
    }

    /// Number of positions.
    pub fn len(&self) -> usize {
        self.boards.len()
    }

    /// True when there are no positions.
    pub fn is_empty(&self) -> bool {
        self.boards.is_empty()
    }

    /// True when every position has a target.
    pub fn labelled(&self) -> bool {
        !self.boards.is_empty() && self.targets.len() == self.boards.len()
    }

    /// Writes the file (see the module docs).
    pub fn save(&self, path: impl AsRef<Path>) -> std::io::Result<()> {
        let variant = self
            .variant
            .ok_or_else(|| std::io::Error::other("data set without a variant"))?;
        let mut w = BufWriter::new(std::fs::File::create(path)?);
        w.write_all(&MAGIC)?;
        w.write_all(&1u32.to_le_bytes())?;
        w.write_all(&code(variant).to_le_bytes())?;
        w.write_all(&(self.labelled() as u32).to_le_bytes())?;
        w.write_all(&(self.boards.len() as u64).to_le_bytes())?;
        for (i, b) in self.boards.iter().enumerate() {
            w.write_all(&b.own)?;
            w.write_all(&b.opp)?;
            w.write_all(&b.own_pinned.to_le_bytes())?;
            w.write_all(&b.opp_pinned.to_le_bytes())?;
            if self.labelled() {
                for x in self.targets[i] {
                    w.write_all(&x.to_le_bytes())?;
                }
            }
        }
        w.flush()
    }

    /// Reads a file written by [`DataSet::save`].
    pub fn load(path: impl AsRef<Path>) -> std::io::Result<DataSet> {
        let mut r = BufReader::new(std::fs::File::open(path)?);
        let mut head = [0u8; 24];
        r.read_exact(&mut head)?;
        let u32_at = |o: usize| u32::from_le_bytes(head[o..o + 4].try_into().expect("4 bytes"));
        if head[..4] != MAGIC || u32_at(4) != 1 {
            return Err(std::io::Error::other("not a TPOS version 1 file"));
        }
        let variant = variant_of(u32_at(8))?;
        let labelled = u32_at(12) == 1;
        let n = u64::from_le_bytes(head[16..24].try_into().expect("8 bytes")) as usize;
        let mut set = DataSet::new(variant);
        set.boards.reserve(n);
        let mut rec = vec![0u8; BOARD_BYTES + if labelled { 16 } else { 0 }];
        for _ in 0..n {
            r.read_exact(&mut rec)?;
            let mut b = Board::EMPTY;
            b.own.copy_from_slice(&rec[0..26]);
            b.opp.copy_from_slice(&rec[26..52]);
            b.own_pinned = u32::from_le_bytes(rec[52..56].try_into().expect("4 bytes"));
            b.opp_pinned = u32::from_le_bytes(rec[56..60].try_into().expect("4 bytes"));
            set.boards.push(b);
            if labelled {
                let f = |k: usize| {
                    let o = BOARD_BYTES + 4 * k;
                    f32::from_le_bytes(rec[o..o + 4].try_into().expect("4 bytes"))
                };
                set.targets.push([f(0), f(1), f(2), f(3)]);
            }
        }
        Ok(set)
    }

    /// Appends `other` (same variant; both labelled or both not).
    pub fn extend(&mut self, other: DataSet) -> Result<(), String> {
        if self.variant.is_some() && other.variant.is_some() && self.variant != other.variant {
            return Err("data sets of different variants".into());
        }
        if !self.is_empty() && self.labelled() != other.labelled() {
            return Err("cannot mix labelled and unlabelled data".into());
        }
        self.variant = self.variant.or(other.variant);
        self.boards.extend(other.boards);
        self.targets.extend(other.targets);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::{Position, Side};

    #[test]
    fn round_trip() {
        let mut set = DataSet::new(Variant::Plakoto);
        let mut b =
            Board::from_position(&Position::start(Variant::Plakoto, Side::White), Side::White);
        set.boards.push(b);
        b.own_pinned = 1 << 5;
        b.opp[3] = 2;
        set.boards.push(b);
        set.targets = vec![[0.5, 0.1, 0.2, 0.0], [0.25, 0.0, 0.5, 0.125]];
        let path = std::env::temp_dir().join(format!("tpos-{}.bin", std::process::id()));
        set.save(&path).unwrap();
        assert_eq!(DataSet::load(&path).unwrap(), set);
        set.targets.clear();
        set.save(&path).unwrap();
        let back = DataSet::load(&path).unwrap();
        assert_eq!(back, set);
        assert!(!back.labelled());
        std::fs::remove_file(&path).unwrap();
    }
}
