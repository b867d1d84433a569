//! Issue point 7 ("winning"): the targets, evaluated on records.
