//! Kernel names: the one rule every backend checks a user's kernel name
//! against (`uop emit --name`, a program file's name, the build API).
//!
//! A kernel name is public: it is the Rust function `NAME` (with `NAME_shapes`,
//! `NameShapes`, ...) of generated Rust, or the C symbols `NAME` and `NAME_shapes`
//! of an object file and its header. It is therefore never renamed: a name that
//! would clash is refused, with an error that says why. Internal names are the
//! ones that give way: the program's tensor, dimension and `$param` names become
//! fresh locals (`type` -> `t_type`, [`Idents`]), the runtime is reached only through `rt::`,
//! and the JIT's own imports are prefixed (`uop_exp`, ...).
//!
//! The rule:
//!
//! - **Every target**: lowercase snake_case, a letter `a`-`z` followed by
//!   letters `a`-`z`, digits and `_` (so the name is the same identifier in Rust
//!   and C, and C's reserved leading underscores and case-folded header macros
//!   `NAME_NUM_INPUTS` cannot collide); and not `main`, a program's entry point.
//! - **Rust** ([`Language::Rust`]): not a Rust keyword (strict or reserved,
//!   edition 2024). C library names are fine: Rust functions live in their module
//!   and their symbols are mangled. The generated file's own module-level names
//!   (`rt`, `KernelError`) and the items of the other kernels of the same file are
//!   checked by the Rust backend when a kernel is added.
//! - **C** ([`Language::C`], object files, their headers and Rust `extern`
//!   blocks): not a C or C++ keyword, not an identifier of the C library or of the
//!   most common POSIX headers (`free`, `exp`, `expf`, `printf`, `read`, ...; a
//!   symbol of that name would replace the library's for the whole program), and
//!   not ending in `_t`, which POSIX reserves for types (`int32_t`).

mod c;
mod idents;

pub use idents::{Idents, camel, snake};

use thiserror::Error;

/// The language a kernel name must be valid in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Language {
    /// A function of generated Rust.
    Rust,
    /// A C symbol: an object file's function, declared by a C header.
    C,
}

/// Why a name cannot name a kernel.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum NameError {
    /// Not lowercase snake_case starting with a letter.
    #[error(
        "`{name}` cannot name a kernel: a kernel name is lowercase snake_case, a letter a-z \
         followed by letters a-z, digits and single `_`s, not ending in `_`"
    )]
    Syntax {
        /// The name given.
        name: String,
    },
    /// `main`.
    #[error("`main` cannot name a kernel: it is the entry point of a Rust or C program")]
    EntryPoint,
    /// A keyword of the target language.
    #[error("`{name}` cannot name a kernel: it is a {language} keyword")]
    Keyword {
        /// The name given.
        name: String,
        /// `Rust`, `C` or `C++`.
        language: &'static str,
    },
    /// An identifier of the C library.
    #[error(
        "`{name}` cannot name a kernel compiled for C: the C library declares it (<{header}>), \
         and an object file's symbol `{name}` would replace the library's when linked"
    )]
    CLibrary {
        /// The name given.
        name: String,
        /// The header (or headers) declaring it.
        header: &'static str,
    },
    /// A name ending in `_t`.
    #[error(
        "`{name}` cannot name a kernel compiled for C: names ending in `_t` are reserved \
         for types (POSIX; <stdint.h> declares `int32_t`, ...)"
    )]
    TypeName {
        /// The name given.
        name: String,
    },
}

/// Words Rust reserves (strict and reserved keywords of edition 2024).
const RUST_KEYWORDS: &[&str] = &[
    "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum", "extern",
    "false", "fn", "for", "gen", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut",
    "pub", "ref", "return", "self", "Self", "static", "struct", "super", "trait", "true", "type",
    "unsafe", "use", "where", "while", "abstract", "become", "box", "do", "final", "macro",
    "override", "priv", "typeof", "unsized", "virtual", "yield", "try", "_",
];

/// True for a Rust keyword (which cannot name a function or a local).
pub fn is_rust_keyword(word: &str) -> bool {
    RUST_KEYWORDS.contains(&word)
}

/// Checks `name` against the rule for `language` (see the [module docs](self)).
///
/// ```
/// use uop_codegen::backend::names::{Language, check_kernel_name};
///
/// assert!(check_kernel_name("softmax_f32", Language::C).is_ok());
/// assert!(check_kernel_name("free", Language::Rust).is_ok());
/// let err = check_kernel_name("free", Language::C).unwrap_err();
/// assert!(err.to_string().contains("stdlib.h"));
/// assert!(check_kernel_name("fn", Language::Rust).is_err());
/// ```
pub fn check_kernel_name(name: &str, language: Language) -> Result<(), NameError> {
    let mut chars = name.chars();
    let snake = matches!(chars.next(), Some('a'..='z'))
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        // What rustc's `non_snake_case` lint wants of `{name}_shapes` too.
        && !name.contains("__")
        && !name.ends_with('_');
    if !snake {
        return Err(NameError::Syntax { name: name.into() });
    }
    if name == "main" {
        return Err(NameError::EntryPoint);
    }
    let keyword = |language| {
        Err(NameError::Keyword {
            name: name.into(),
            language,
        })
    };
    match language {
        Language::Rust => {
            if is_rust_keyword(name) {
                return keyword("Rust");
            }
        }
        Language::C => {
            if c::C_KEYWORDS.contains(&name) {
                return keyword("C");
            }
            if c::CPP_KEYWORDS.contains(&name) {
                return keyword("C++");
            }
            if let Some(header) = c::library_header(name) {
                return Err(NameError::CLibrary {
                    name: name.into(),
                    header,
                });
            }
            if name.ends_with("_t") {
                return Err(NameError::TypeName { name: name.into() });
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(name: &str, language: Language) -> String {
        match check_kernel_name(name, language) {
            Err(e) => e.to_string(),
            Ok(()) => panic!("`{name}` accepted for {language:?}"),
        }
    }

    #[test]
    fn every_target_wants_lowercase_snake_case_starting_with_a_letter() {
        for language in [Language::Rust, Language::C] {
            for bad in [
                "", "Softmax", "SOFTMAX", "_k", "9lives", "soft-max", "é", "a b",
                // `a__shapes` / `a__b_shapes` would not be snake_case for rustc.
                "a_", "a__b",
            ] {
                assert!(refused(bad, language).contains("lowercase snake_case"));
            }
            for good in ["softmax", "softmax_f32", "k2", "a_b"] {
                assert_eq!(check_kernel_name(good, language), Ok(()), "{good}");
            }
            assert!(refused("main", language).contains("entry point"));
        }
    }

    #[test]
    fn rust_refuses_its_keywords_and_takes_c_library_names() {
        for kw in ["fn", "type", "self", "gen", "try", "yield", "async"] {
            assert!(refused(kw, Language::Rust).contains("Rust keyword"), "{kw}");
        }
        for fine in [
            "free",
            "calloc",
            "exp",
            "int",
            "spin_until",
            "printf",
            "int32_t",
        ] {
            assert_eq!(check_kernel_name(fine, Language::Rust), Ok(()), "{fine}");
        }
    }

    #[test]
    fn c_refuses_keywords_library_names_and_type_names() {
        for kw in ["int", "double", "static_assert", "bool", "asm"] {
            assert!(refused(kw, Language::C).contains("C keyword"), "{kw}");
        }
        for kw in ["class", "new", "delete", "this", "and"] {
            assert!(refused(kw, Language::C).contains("C++ keyword"), "{kw}");
        }
        for (name, header) in [
            ("free", "stdlib.h"),
            ("calloc", "stdlib.h"),
            ("exp", "math.h"),
            ("expf", "math.h"),
            ("expl", "math.h"),
            ("isnan", "math.h"),
            ("memset", "string.h"),
            ("printf", "stdio.h"),
            ("stdout", "stdio.h"),
            ("errno", "errno.h"),
            ("read", "unistd.h"),
        ] {
            assert!(refused(name, Language::C).contains(header), "{name}");
        }
        assert!(refused("int32_t", Language::C).contains("`_t`"));
        for fine in ["spin_until", "softmax", "expo", "exp_f32", "relu"] {
            assert_eq!(check_kernel_name(fine, Language::C), Ok(()), "{fine}");
        }
    }

    #[test]
    fn no_library_name_ends_like_a_companion_symbol() {
        // `NAME_shapes` is the kernel's other symbol: no allowed `NAME` can make it
        // a library name.
        for h in c::C_LIBRARY {
            assert!(h.names.iter().all(|n| !n.ends_with("_shapes")));
        }
    }
}
