//! [`LoopAgent`]: the production turn loop behind the [`Agent`] seam, the [`Turn`] a runtime
//! drives, the [`TurnSource`] a driver task waits on, and the [`TurnObserver`] it reports to.
//!
//! One topic per file: `loop_agent` (the agent, its state, its input and disposal, and the seams
//! it reports to), `builder` (its options and constructors), `turn` (opening and driving
//! turns) and `seam` (its [`Agent`] implementation).

mod builder;
mod loop_agent;
mod seam;
mod turn;

pub use builder::LoopAgentBuilder;
pub use loop_agent::{InputSink, LoopAgent, TURN_END, TURN_START, TurnObserver};
pub use turn::{Turn, TurnSource};

#[cfg(doc)]
use turnkit_core::Agent;
