//! The `.uop` program text format: parser and printer (DESIGN.md §10).
