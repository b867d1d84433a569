//! Scenario files (in progress).
