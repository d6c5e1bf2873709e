//! Placeholder: a semantic diff of two BTFs (by name and layout) is being written here.
