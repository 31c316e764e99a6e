//! Session stores: the [`SessionStore`] seam, [`MemoryStore`] and [`JsonlStore`], and the
//! [`BatchIndex`] seam through which a family names the index rows its events imply.

mod error;
mod index;
mod jsonl;
mod log;
mod memory;
mod seam;

pub use error::{BackendError, BackendKind, StoreError};
pub use index::{BatchIndex, IndexChange, IndexUpdate, SessionIndex};
pub use jsonl::{JsonlStore, SessionFile, TornTail};
pub use memory::MemoryStore;
pub use seam::SessionStore;
