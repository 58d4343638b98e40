//! `quantize_x_q8`: rows of x quantized once per 32-element block (int8, one f32 scale per
//! block) for the dp4a gemm ([`super::GemvBatched::dispatch_gemm`] with [`super::GemmKind::Dp4a`]), which reads them
//! instead of f32 x.
//!
//! Why a dispatch of its own: the gemm's workgroups each cover 64 weight rows, so when they
//! quantized x themselves every block of x was quantized once per 64 rows of the matrix
//! (64 times for a 4096-row matrix) and read as 128 bytes of f32 each time; quantized once,
//! a block is 48 bytes and no arithmetic. llama.cpp's MMQ kernels do the same
//! (`quantize_q8_1` before the matrix multiply).

use gpuscope_runtime::{grid_2d, Cost, Dispatch, Gpu, GpuBuffer, GpuError, ShaderSource};

pub static QUANTIZE_X_SHADER: ShaderSource = ShaderSource {
    name: "quantize_x_q8",
    wgsl: include_str!("quantize_x.wgsl"),
};

/// Bytes of one quantized block: 32 int8 quants (8 words), d and d·Σq as f32 bits, two
/// words of padding (three 16-byte loads).
pub const QUANTIZED_BLOCK_BYTES: u64 = 48;

const WG: u32 = 64;

/// Quantizes the first `n_rows` (the params buffer's word 1) of `max_batch` rows of `cols`
/// f32 each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuantizeX {
    pub cols: u32,
    pub max_batch: u32,
}

impl QuantizeX {
    pub const OP: &'static str = "quantize_x_q8";

    fn blocks(&self) -> u64 {
        u64::from(self.cols / 32)
    }

    /// Bytes the quantized rows take (the `xq` buffer's least size).
    pub fn buffer_bytes(&self) -> u64 {
        u64::from(self.max_batch) * self.blocks() * QUANTIZED_BLOCK_BYTES
    }

    /// Declared cost for a full batch: x read once, the blocks written once.
    pub fn cost(&self) -> Cost {
        let elems = u64::from(self.max_batch) * u64::from(self.cols);
        Cost {
            bytes: elems * 4 + self.buffer_bytes(),
            flops: 3 * elems,
        }
    }

    /// Reads x (`max_batch × cols` f32) and params (`[pos0, n_rows, 0, 0]`), writes `xq`.
    pub fn dispatch(
        &self,
        gpu: &Gpu,
        x: &GpuBuffer,
        xq: &GpuBuffer,
        params: &GpuBuffer,
    ) -> Result<Dispatch, GpuError> {
        if self.cols == 0 || !self.cols.is_multiple_of(32) || self.max_batch == 0 {
            return Err(GpuError::Invalid(format!(
                "{self:?}: cols must be a positive multiple of 32 and max_batch > 0"
            )));
        }
        let threads = u64::from(self.max_batch) * self.blocks();
        if threads * 12 > u64::from(u32::MAX) {
            return Err(GpuError::Invalid(format!("{self:?}: more than 2^32 words")));
        }
        let x_bytes = u64::from(self.max_batch) * u64::from(self.cols) * 4;
        for (buf, role, bytes) in [
            (x, "x", x_bytes),
            (xq, "xq", self.buffer_bytes()),
            (params, "params", 16),
        ] {
            if buf.size() < bytes {
                return Err(GpuError::Invalid(format!(
                    "{self:?}: buffer \"{}\" ({role}) has {} bytes, needs {bytes}",
                    buf.label(),
                    buf.size()
                )));
            }
        }
        let pipeline = gpu.pipeline(
            &QUANTIZE_X_SHADER,
            "main",
            &[("COLS", f64::from(self.cols))],
        )?;
        let bind_group = gpu.bind_group(&pipeline, &[x, xq, params])?;
        Ok(Dispatch::new(
            Self::OP,
            pipeline,
            bind_group,
            grid_2d((threads as u32).div_ceil(WG)),
            self.cost(),
            &[x, params],
            &[xq],
        ))
    }

    /// The kernel's words for the first `n_rows` rows of `x` (as [`super::q8_blocks`]
    /// rounds: the gemm's oracle multiplies by exactly these values).
    pub fn cpu(&self, x: &[f32], n_rows: u32) -> Vec<u32> {
        let len = n_rows as usize * self.cols as usize;
        let mut words = Vec::with_capacity(len / 32 * 12);
        for block in x[..len].chunks(32) {
            let (d, q) = super::q8_block(block);
            words.extend(
                q.chunks(4)
                    .map(|c| u32::from_le_bytes([c[0] as u8, c[1] as u8, c[2] as u8, c[3] as u8])),
            );
            let sum: i32 = q.iter().map(|&q| i32::from(q)).sum();
            words.extend([d.to_bits(), (d * sum as f32).to_bits(), 0, 0]);
        }
        words
    }

    /// The values the quantized words stand for, q·d per element: the x̂ the dp4a gemm
    /// multiplies by.
    pub fn dequantize(words: &[u32]) -> Vec<f32> {
        words
            .chunks_exact(12)
            .flat_map(|b| {
                let d = f32::from_bits(b[8]);
                b[..8]
                    .iter()
                    .flat_map(|w| w.to_le_bytes())
                    .map(move |q| f32::from(q as i8) * d)
            })
            .collect()
    }
}
