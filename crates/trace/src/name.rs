//! [`Name`]: a shared, immutable string for the names every event repeats (op, label,
//! pipeline).
//!
//! A decode profile names a few hundred distinct things, each a million times in a
//! long run: as `String`s the three names of a million dispatch events were three
//! million allocations and ~300 MB (a pipeline name carries its override constants),
//! most of a report's time and memory. A `Name` clones by a reference count, and the
//! readers intern them ([`Interner`]) so that equal names share one allocation.

use std::borrow::Borrow;
use std::cell::RefCell;
use std::collections::HashSet;
use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// An immutable string shared by reference count; reads as a `&str`.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Name(Arc<str>);

impl Name {
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// `s` as a name shared with the equal names read before it in the current
    /// [`Interner::scope`] (outside one, a name of its own).
    pub fn interned(s: &str) -> Name {
        CURRENT.with(|c| match c.borrow_mut().as_mut() {
            Some(i) => i.intern(s),
            None => Name::from(s),
        })
    }
}

impl Default for Name {
    fn default() -> Name {
        Name::from("")
    }
}

impl Deref for Name {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl Borrow<str> for Name {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for Name {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&*self.0, f)
    }
}

impl From<&str> for Name {
    fn from(s: &str) -> Name {
        Name(Arc::from(s))
    }
}

impl From<String> for Name {
    fn from(s: String) -> Name {
        Name(Arc::from(s))
    }
}

impl From<&String> for Name {
    fn from(s: &String) -> Name {
        Name::from(s.as_str())
    }
}

impl From<Name> for String {
    fn from(n: Name) -> String {
        n.0.to_string()
    }
}

impl PartialEq<str> for Name {
    fn eq(&self, other: &str) -> bool {
        &*self.0 == other
    }
}

impl PartialEq<&str> for Name {
    fn eq(&self, other: &&str) -> bool {
        &*self.0 == *other
    }
}

impl PartialEq<String> for Name {
    fn eq(&self, other: &String) -> bool {
        *self.0 == **other
    }
}

impl PartialEq<Name> for str {
    fn eq(&self, other: &Name) -> bool {
        self == &*other.0
    }
}

impl PartialEq<Name> for &str {
    fn eq(&self, other: &Name) -> bool {
        *self == &*other.0
    }
}

impl PartialEq<Name> for String {
    fn eq(&self, other: &Name) -> bool {
        **self == *other.0
    }
}

impl Serialize for Name {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for Name {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Name, D::Error> {
        // Borrowed where the input allows, so an interned name costs no allocation.
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        Ok(Name::interned(&s))
    }
}

thread_local! {
    /// The interner of the read in progress on this thread (see [`Interner::scope`]).
    static CURRENT: RefCell<Option<Interner>> = const { RefCell::new(None) };
}

/// Equal names made one [`Name`].
#[derive(Default)]
pub struct Interner {
    names: HashSet<Name>,
}

impl Interner {
    pub fn intern(&mut self, s: &str) -> Name {
        if let Some(n) = self.names.get(s) {
            return n.clone();
        }
        let n = Name::from(s);
        self.names.insert(n.clone());
        n
    }

    /// Runs `read` with an interner for the names it deserializes on this thread; the
    /// interner is dropped after (the names live on in what was read).
    pub fn scope<T>(read: impl FnOnce() -> T) -> T {
        let outer = CURRENT.with(|c| c.borrow_mut().replace(Interner::default()));
        let out = read();
        CURRENT.with(|c| *c.borrow_mut() = outer);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_read_in_one_scope_share_their_bytes() {
        let json = r#"["gemv_q4_1", "rope", "gemv_q4_1"]"#;
        let names: Vec<Name> = Interner::scope(|| serde_json::from_str(json).unwrap());
        assert_eq!(names[0], "gemv_q4_1");
        assert!(std::ptr::eq(names[0].as_ptr(), names[2].as_ptr()));
        assert!(!std::ptr::eq(names[0].as_ptr(), names[1].as_ptr()));
        // Outside a scope each is its own; equality is by content.
        let apart: Vec<Name> = serde_json::from_str(json).unwrap();
        assert!(!std::ptr::eq(apart[0].as_ptr(), apart[2].as_ptr()));
        assert_eq!(apart, names);
        assert_eq!(
            serde_json::to_string(&names).unwrap(),
            json.replace(", ", ",")
        );
    }
}
