// The dp4a frame's hooks for the folded down projection (epilogue_silu_down.wgsl): the
// thread's down rows (lid, lid + WG_SIZE, ..., at most 4) load their block column of
// W_down at the start; after the rows are emitted and a barrier, each multiplies h into
// its rows in f32 (down_<fmt>.wgsl: `down_dot`), the workgroup's partial.
fn epilogue_prefetch(lane: u32, row0: u32) -> Prefetched {
    return Prefetched(vec4<f32>(0.0), 0u);
}

fn emit_prefetched(r: u32, v: vec4<f32>, p: Prefetched) {
    emit(r, v);
}

struct DownBlocks {
    b0: WBlock,
    b1: WBlock,
    b2: WBlock,
    b3: WBlock,
}

var<private> down_w: DownBlocks;

// Block column `wg_lin` of the thread's down rows (rows past the last reload it, unused).
fn tail_prefetch(lid: u32, wg_lin: u32) {
    let last = DOWN_ROWS - 1u;
    let b0 = load_down_block(min(lid, last), wg_lin);
    down_w = DownBlocks(b0, b0, b0, b0);
    if lid + WG_SIZE <= last {
        down_w.b1 = load_down_block(lid + WG_SIZE, wg_lin);
    }
    if lid + 2u * WG_SIZE <= last {
        down_w.b2 = load_down_block(lid + 2u * WG_SIZE, wg_lin);
    }
    if lid + 3u * WG_SIZE <= last {
        down_w.b3 = load_down_block(lid + 3u * WG_SIZE, wg_lin);
    }
}

fn put_partial(row: u32, wg_lin: u32, wb: WBlock) {
    if row < DOWN_ROWS {
        y[wg_lin * DOWN_ROWS + row] = down_dot(wb);
    }
}

fn tail(lid: u32, wg_lin: u32) {
    workgroupBarrier();
    put_partial(lid, wg_lin, down_w.b0);
    put_partial(lid + WG_SIZE, wg_lin, down_w.b1);
    put_partial(lid + 2u * WG_SIZE, wg_lin, down_w.b2);
    put_partial(lid + 3u * WG_SIZE, wg_lin, down_w.b3);
}
