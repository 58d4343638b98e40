//! The gemv oracle: dequantize a row with [`WeightFormat::dequantize_row`], then a dot
//! product in column order (in `T`: f32 like the kernel, or f64 for exact arithmetic).
//! Deliberately plain: the GPU kernel is tested against it.
//!
//! [`WeightFormat::dequantize_row`]: crate::WeightFormat::dequantize_row

use super::Gemv;
use crate::Real;

impl Gemv {
    /// `y[out_offset + r] = Σ_c W[r, c]·x[c]` for every row; other elements of `y` untouched.
    ///
    /// # Panics
    /// If `w`, `x` or `y` is shorter than the shape needs.
    pub fn cpu<T: Real>(&self, w: &[u8], x: &[T], y: &mut [T]) {
        let (rows, cols) = (self.rows as usize, self.cols as usize);
        let row_bytes = self.row_bytes() as usize;
        let stored = self.layout.buffer_bytes(self.format, self.rows, self.cols) as usize;
        assert!(
            w.len() >= stored,
            "gemv cpu: {} weight bytes, need {stored}",
            w.len(),
        );
        // A packed matrix is read as the GGUF bytes it was made from (an exact inverse).
        let unpacked;
        let w = match self.layout {
            super::WeightLayout::Gguf => w,
            layout => {
                let blocks = rows * cols / self.format.block_elems() as usize;
                unpacked = layout.unpack(self.format, w, blocks);
                &unpacked[..]
            }
        };
        assert!(
            x.len() >= cols,
            "gemv cpu: x has {} elements, need {cols}",
            x.len()
        );
        let out = &mut y[self.out_offset as usize..][..rows];
        // Rows dequantized a few at a time, each dot product in column order
        // (`Real::dot_rows`: the rows' sums interleaved, each the plain fold's).
        const ROWS_AT_ONCE: usize = 32;
        let mut dequantized = vec![0.0f32; ROWS_AT_ONCE * cols];
        for (i, ys) in out.chunks_mut(ROWS_AT_ONCE).enumerate() {
            let first = i * ROWS_AT_ONCE;
            let buf = &mut dequantized[..ys.len() * cols];
            for (j, row) in buf.chunks_exact_mut(cols.max(1)).enumerate() {
                let r = first + j;
                self.format
                    .dequantize_row(&w[r * row_bytes..][..row_bytes], row);
            }
            T::dot_rows(buf, &x[..cols], ys);
        }
    }
}

impl super::GemvFused {
    /// The oracle of the fused forms: the unfused ops' oracles in sequence — rms_norm
    /// ([`crate::rms_norm::RmsNorm::cpu`]), the gemv, then the epilogue (the residual add,
    /// rope as [`crate::rope::Rope::cpu`] does it with the KV-cache stores, or
    /// [`crate::silu_mul::SiluMul::cpu`]).
    ///
    /// `kv` is `(pos, k_cache, v_cache)` for [`super::GemvEpilogue::RopeKv`]; rows of q
    /// land in `y` (rotated), k and v rows in the caches at row `pos` (nothing is cached
    /// when `pos` is outside them, as on the GPU).
    ///
    /// With a post norm folded in, `x` is its output ([`Self::post_input`]).
    ///
    /// # Panics
    /// If a slice is shorter than the shape needs, or `norm_weight` / `kv` is missing for
    /// a form that uses it.
    pub fn cpu<T: Real>(
        &self,
        w: &[u8],
        x: &[T],
        norm_weight: Option<&[T]>,
        y: &mut [T],
        kv: Option<(u32, &mut [T], &mut [T])>,
    ) {
        self.cpu_variant(super::XRounding::Exact, w, x, norm_weight, y, kv)
    }

    /// The input of a folded post norm ([`Self::post_norm`]): x + d / sqrt(mean(d²) +
    /// eps) ∘ weight, as [`crate::rms_norm::RmsNorm::cpu_add`] computes it. The kernel
    /// writes it out as the next residual stream, and the gemv (its own norm and all)
    /// runs on it; `x` itself when no post norm is folded in.
    ///
    /// # Panics
    /// If a post norm is folded in and `d` or `weight` is missing or short.
    pub fn post_input<T: Real>(&self, x: &[T], post: Option<(&[T], &[T])>) -> Vec<T> {
        let cols = self.gemv.cols;
        let mut out = x[..cols as usize].to_vec();
        if let Some(eps) = self.post_norm {
            let (d, weight) = post.expect("the folded post norm needs d and its weight");
            crate::rms_norm::RmsNorm { n: cols, eps }.cpu_add(d, weight, &mut out);
        }
        out
    }

    /// The input with partials folded in ([`Self::partials`]): x + the sum of the
    /// `partials` vectors of `cols` in `parts`, added in order as the kernel adds them.
    /// The kernel writes it out as the next residual stream.
    ///
    /// # Panics
    /// If `parts` holds fewer than `partials` vectors.
    pub fn partials_input<T: Real>(&self, x: &[T], parts: &[T]) -> Vec<T> {
        let cols = self.gemv.cols as usize;
        let mut out = x[..cols].to_vec();
        for p in 0..self.partials as usize {
            for (o, v) in out.iter_mut().zip(&parts[p * cols..(p + 1) * cols]) {
                *o = *o + *v;
            }
        }
        out
    }

    /// The oracle of [`super::GemvEpilogue::SiluDown`]: h = silu(gate) · up as
    /// [`Self::cpu_variant`] computes it, then partial p, the down matrix's block column
    /// p times h's block p (h unrounded, as the kernel keeps it), into `y[p · dim..]`.
    ///
    /// # Panics
    /// If the epilogue is not `SiluDown`, or a slice is shorter than the shape needs.
    pub fn cpu_down<T: Real>(
        &self,
        rounding: super::XRounding,
        (w, w_down): (&[u8], &[u8]),
        x: &[T],
        norm_weight: Option<&[T]>,
        y: &mut [T],
    ) {
        let down = self
            .down_gemv()
            .expect("cpu_down: a folded down projection");
        let (n, dim) = (down.cols as usize, down.rows as usize);
        let mut h = vec![T::zero(); n];
        self.cpu_variant(rounding, w, x, norm_weight, &mut h, None);
        let mut rows = vec![0.0f32; dim * n];
        let unpacked = down.layout.unpack(down.format, w_down, dim * n / 32);
        let row_bytes = down.row_bytes() as usize;
        for (r, row) in rows.chunks_exact_mut(n).enumerate() {
            down.format
                .dequantize_row(&unpacked[r * row_bytes..][..row_bytes], row);
        }
        let mut block = vec![0.0f32; dim * 32];
        for (p, part) in y.chunks_exact_mut(dim).take(n / 32).enumerate() {
            let cols = p * 32..(p + 1) * 32;
            for (r, out) in block.chunks_exact_mut(32).enumerate() {
                out.copy_from_slice(&rows[r * n..][cols.clone()]);
            }
            T::dot_rows(&block, &h[cols], part);
        }
    }

    /// [`Self::cpu`] with x rounded as `rounding` says ([`super::XRounding`]; the `dp4a`
    /// kernels quantize x): the gemv's input, x (times the norm weight when rms_norm is
    /// folded in, the norm's scale applied to each row's sum after, as the kernel does),
    /// goes through [`super::q8_blocks`] in f32 first.
    pub fn cpu_variant<T: Real>(
        &self,
        rounding: super::XRounding,
        w: &[u8],
        x: &[T],
        norm_weight: Option<&[T]>,
        y: &mut [T],
        kv: Option<(u32, &mut [T], &mut [T])>,
    ) {
        use super::{GemvEpilogue, XRounding};
        let g = self.gemv;
        let cols = g.cols as usize;
        let x = &x[..cols];
        let norm_weight = || &norm_weight.expect("the fused rms_norm needs its weight")[..cols];
        let (input, row_scale): (Vec<T>, T) = match (self.norm, rounding) {
            (Some(eps), XRounding::Exact) => {
                let mut out = vec![T::zero(); cols];
                crate::rms_norm::RmsNorm { n: g.cols, eps }.cpu(x, norm_weight(), &mut out);
                (out, T::one())
            }
            (None, XRounding::Exact) => (x.to_vec(), T::one()),
            (norm, rounding) => {
                // The int8 blocks are of u = x · norm weight (f32, as the kernel forms
                // them); the norm's scale multiplies each row's sum after.
                let weigh = |x: &[T]| -> Vec<f32> {
                    match norm {
                        Some(_) => x
                            .iter()
                            .zip(norm_weight())
                            .map(|(&v, &nw)| (v * nw).as_f32())
                            .collect(),
                        None => x.iter().map(|v| v.as_f32()).collect(),
                    }
                };
                let u = weigh(x);
                let scale = match norm {
                    Some(eps) => {
                        let sum_sq = crate::real::dot(x, x);
                        T::one() / (sum_sq / T::of_u32(g.cols) + T::of(eps)).sqrt()
                    }
                    None => T::one(),
                };
                let rounded = match rounding {
                    XRounding::Int8Following(theirs) => {
                        let theirs: Vec<T> = theirs[..cols].iter().map(|&v| T::of(v)).collect();
                        let theirs = weigh(&theirs);
                        super::q8_blocks_following(&u, &theirs)
                    }
                    _ => super::q8_blocks(&u),
                };
                (rounded.into_iter().map(T::of).collect(), scale)
            }
        };
        let mut rows = vec![T::zero(); g.rows as usize];
        Gemv { out_offset: 0, ..g }.cpu(w, &input, &mut rows);
        if row_scale != T::one() {
            rows.iter_mut().for_each(|r| *r = *r * row_scale);
        }
        let off = g.out_offset as usize;
        match self.epilogue {
            GemvEpilogue::Store => y[off..off + rows.len()].copy_from_slice(&rows),
            GemvEpilogue::Accumulate => {
                for (d, &v) in y[off..off + rows.len()].iter_mut().zip(&rows) {
                    *d = *d + v;
                }
            }
            // With the down projection folded in, h; `cpu_down` goes on from there.
            GemvEpilogue::SiluMul { n, up_row } | GemvEpilogue::SiluDown { n, up_row, .. } => {
                let (n, up) = (n as usize, up_row as usize);
                crate::silu_mul::SiluMul { n: n as u32 }.cpu(
                    &rows[..n],
                    &rows[up..up + n],
                    &mut y[off..off + n],
                );
            }
            GemvEpilogue::GeluMul { n, up_row } => {
                let (n, up) = (n as usize, up_row as usize);
                crate::gelu_mul::GeluMul { n: n as u32 }.cpu(
                    &rows[..n],
                    &rows[up..up + n],
                    &mut y[off..off + n],
                );
            }
            GemvEpilogue::RopeKv(rope) => {
                let (pos, k_cache, v_cache) = kv.expect("rope needs (pos, k_cache, v_cache)");
                let hd = rope.head_dim as usize;
                let q_dim = rope.n_heads as usize * hd;
                let kv_dim = rope.n_kv_heads as usize * hd;
                for r in (0..rows.len()).step_by(2) {
                    let gr = off + r;
                    let (mut a, mut b) = (rows[r], rows[r + 1]);
                    let i = (gr % hd) / 2;
                    if gr < q_dim + kv_dim && i < rope.rope_dims as usize / 2 {
                        let (c, s) = rope.cos_sin::<T>(pos, i as u32);
                        (a, b) = (a * c - b * s, a * s + b * c);
                    }
                    let (dst, e) = if gr < q_dim {
                        (&mut *y, gr)
                    } else if pos >= rope.max_ctx {
                        continue;
                    } else if gr < q_dim + kv_dim {
                        (&mut *k_cache, pos as usize * kv_dim + gr - q_dim)
                    } else {
                        (&mut *v_cache, pos as usize * kv_dim + gr - q_dim - kv_dim)
                    };
                    dst[e] = a;
                    dst[e + 1] = b;
                }
            }
        }
    }
}
