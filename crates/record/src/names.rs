//! Interned names: op and label strings kept once, referred to by a `u32` per dispatch so
//! that recording a dispatch never allocates.

use std::collections::HashMap;
use std::sync::Arc;

/// An interned string (an op, a label, a step or pass name) of one [`crate::Recorder`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Name(pub(crate) u32);

#[derive(Default)]
pub(crate) struct Names {
    strings: Vec<Arc<str>>,
    index: HashMap<Arc<str>, u32>,
}

impl Names {
    /// The name for `s`, added on first use (the only allocation).
    pub(crate) fn intern(&mut self, s: &str) -> Name {
        if let Some(&i) = self.index.get(s) {
            return Name(i);
        }
        let arc: Arc<str> = s.into();
        let i = self.strings.len() as u32;
        self.strings.push(arc.clone());
        self.index.insert(arc, i);
        Name(i)
    }

    pub(crate) fn get(&self, n: Name) -> &str {
        self.strings.get(n.0 as usize).map(|s| &**s).unwrap_or("?")
    }
}
