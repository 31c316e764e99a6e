//! The scenario runner (spec/scenarios.md).
