//! How a gemv's weight matrix lies in its GPU buffer ([`WeightLayout`]).
//!
//! `Gguf` is the file's bytes as they are: blocks of `{scales, quants}` one after another
//! (18 bytes for q4_0, so most blocks start mid-word). `Packed` (q4_0, q4_1, q8_0) moves
//! the same bytes apart: first every block's quants, 16 bytes per block (32 for q8_0),
//! then every block's scales (`d` as f16; `d, m` for q4_1), in block order (row-major).
//! Every block's quants then start on a 16-byte boundary, so a lane loads them with one
//! aligned `vec4<u32>` and consecutive lanes read consecutive 16-byte words; the bytes
//! moved per token are the same. The buffer is padded to 32 bytes (the kernels bind it
//! as `array<vec4<u32>>`, the wide rows frame as `array<vec4<u64>>`). Repacking is a byte permutation: [`WeightLayout::unpack`]
//! gives the GGUF bytes back exactly, and the CPU oracle reads packed matrices that way.

use crate::quant::WeightFormat;

/// Where a matrix's quants and scales lie (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub enum WeightLayout {
    /// The GGUF bytes as they are.
    #[default]
    Gguf,
    /// Quants of every block (16-byte aligned), then scales of every block.
    Packed,
}

impl WeightLayout {
    pub const ALL: [WeightLayout; 2] = [Self::Gguf, Self::Packed];

    /// The name `--kernel weights=NAME` takes and profiles record.
    pub fn name(self) -> &'static str {
        match self {
            Self::Gguf => "gguf",
            Self::Packed => "packed",
        }
    }

    pub fn parse(name: &str) -> Option<WeightLayout> {
        Self::ALL.into_iter().find(|l| l.name() == name)
    }

    /// Whether `format` can be stored in this layout (`Packed`: q4_0, q4_1, q8_0).
    pub fn supports(self, format: WeightFormat) -> bool {
        self == Self::Gguf || packed_parts(format).is_some()
    }

    /// The layout a matrix of `format` gets when `self` is asked for: `self` where the
    /// format supports it, else `Gguf`.
    pub fn for_format(self, format: WeightFormat) -> WeightLayout {
        if self.supports(format) {
            self
        } else {
            Self::Gguf
        }
    }

    /// Bytes the buffer of a `rows × cols` matrix must hold (GGUF: the file's bytes;
    /// packed: the same, padded to 32).
    ///
    /// # Panics
    /// If `cols` is not a whole number of blocks, or the format has no such layout.
    pub fn buffer_bytes(self, format: WeightFormat, rows: u32, cols: u32) -> u64 {
        let gguf = u64::from(rows)
            * format
                .row_bytes(u64::from(cols))
                .unwrap_or_else(|e| panic!("{e}"));
        match self {
            Self::Gguf => gguf,
            Self::Packed => {
                packed_parts(format).expect("format has a packed layout");
                gguf.next_multiple_of(PACKED_ALIGN)
            }
        }
    }

    /// Where the scales of a packed `rows × cols` matrix start, in 16-byte words (the
    /// kernels' `SCALES_AT`): right after the quants.
    pub fn scales_at(format: WeightFormat, rows: u32, cols: u32) -> u32 {
        let (quant_bytes, _) = packed_parts(format).expect("format has a packed layout");
        let blocks = u64::from(rows) * u64::from(cols / 32);
        u32::try_from(blocks * quant_bytes as u64 / 16).expect("matrix fits a u32 index")
    }

    /// The GGUF bytes `gguf` (whole blocks of `format`) in this layout.
    pub fn pack(self, format: WeightFormat, gguf: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        self.pack_into(format, gguf, &mut out);
        out
    }

    /// [`Self::pack`] into `out` (cleared first). A model's upload packs every matrix
    /// into one reused vector: a fresh one per matrix made the kernel zero new pages for
    /// every weight byte, most of the load's CPU time (BENCHMARKS.md run 51).
    pub fn pack_into(self, format: WeightFormat, gguf: &[u8], out: &mut Vec<u8>) {
        out.clear();
        match self {
            Self::Gguf => out.extend_from_slice(gguf),
            Self::Packed => {
                let (qb, sb) = packed_parts(format).expect("format has a packed layout");
                let bb = qb + sb;
                assert!(gguf.len().is_multiple_of(bb), "pack: not whole blocks");
                let n = gguf.len() / bb;
                out.resize(gguf.len().next_multiple_of(PACKED_ALIGN as usize), 0);
                let (quants, scales) = out.split_at_mut(n * qb);
                for (i, block) in gguf.chunks_exact(bb).enumerate() {
                    scales[i * sb..][..sb].copy_from_slice(&block[..sb]);
                    quants[i * qb..][..qb].copy_from_slice(&block[sb..]);
                }
            }
        }
    }

    /// The GGUF bytes of `blocks` blocks of `format` stored in this layout (the inverse of
    /// [`Self::pack`]).
    pub fn unpack(self, format: WeightFormat, stored: &[u8], blocks: usize) -> Vec<u8> {
        match self {
            Self::Gguf => stored[..blocks * format.block_bytes() as usize].to_vec(),
            Self::Packed => {
                let (qb, sb) = packed_parts(format).expect("format has a packed layout");
                let (quants, scales) = stored.split_at(blocks * qb);
                let mut out = Vec::with_capacity(blocks * (qb + sb));
                for i in 0..blocks {
                    out.extend_from_slice(&scales[i * sb..][..sb]);
                    out.extend_from_slice(&quants[i * qb..][..qb]);
                }
                out
            }
        }
    }
}

/// What a packed buffer is padded to: the wide rows frame reads it in 32-byte elements,
/// the last of which holds the last scales.
const PACKED_ALIGN: u64 = 32;

/// (quant bytes, scale bytes) per block of the formats with a packed layout. In GGUF the
/// scales come first in each block, the quants after them.
fn packed_parts(format: WeightFormat) -> Option<(usize, usize)> {
    match format {
        WeightFormat::Q4_0 => Some((16, 2)),
        WeightFormat::Q4_1 => Some((16, 4)),
        WeightFormat::Q8_0 => Some((32, 2)),
        _ => None,
    }
}
