//! Where a replay is, for a watchdog on another thread (`replay --timeout`): before each
//! unit of GPU work (a step, a command's benchmark, the output comparison) the replay
//! says what it is about to run, naming the dispatch most likely to hang: the first one
//! running a substituted kernel.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use gpuscope_trace::capture::{Capture, GraphDesc};

use crate::capture::substitute::Substitution;

#[derive(Debug, Default)]
pub struct ReplayProgress {
    units: AtomicU64,
    now: Mutex<String>,
}

impl ReplayProgress {
    /// Starts a unit of work described by `what`.
    pub fn enter(&self, what: String) {
        *self.now.lock().unwrap() = what;
        self.units.fetch_add(1, Ordering::SeqCst);
    }

    /// Units started so far: unchanged for long means the GPU is stuck in the current one.
    pub fn units(&self) -> u64 {
        self.units.load(Ordering::SeqCst)
    }

    /// What is running now.
    pub fn now(&self) -> String {
        self.now.lock().unwrap().clone()
    }
}

/// The first dispatch of `graph` that runs a substituted kernel, as
/// "dispatch I `LABEL` (substituted kernel `SHADER`)", or the dispatch count.
pub(crate) fn suspect(capture: &Capture, graph: &GraphDesc, subs: &[Substitution]) -> String {
    let c = &capture.commands;
    let found = graph.dispatches().enumerate().find_map(|(i, d)| {
        let shader = &c.shaders[c.pipelines[d.pipeline].shader].name;
        subs.iter()
            .any(|s| &s.shader == shader)
            .then(|| format!("dispatch {i} `{}` (substituted kernel `{shader}`)", d.label))
    });
    found.unwrap_or_else(|| format!("one of its {} dispatches", graph.dispatches().count()))
}
