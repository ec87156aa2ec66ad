//! The error every macro op returns: which op, which attribute or operand, and why.

use thiserror::Error;
use uop_codegen::text::{Attrs, MacroError};
use uop_codegen::uop::UopError;

/// A macro op rejected its operands or attributes.
#[derive(Clone, Debug, PartialEq, Error)]
pub enum OpError {
    /// An attribute has an impossible value.
    #[error("{op}: {attr}={value}: {message}")]
    Attr {
        /// The op.
        op: &'static str,
        /// The attribute's name.
        attr: &'static str,
        /// The offending value, printed.
        value: String,
        /// Why it is rejected.
        message: String,
    },
    /// Operand shapes or types do not fit the op.
    #[error("{op}: {message}")]
    Operand {
        /// The op.
        op: &'static str,
        /// What is wrong, naming the shapes involved.
        message: String,
    },
    /// A micro op built by the op rejected its arguments.
    #[error("{op}: {source}")]
    Uop {
        /// The op.
        op: &'static str,
        /// The builder's error.
        source: UopError,
    },
}

impl OpError {
    /// An attribute error.
    pub fn attr(
        op: &'static str,
        attr: &'static str,
        value: impl std::fmt::Display,
        message: impl Into<String>,
    ) -> Self {
        OpError::Attr {
            op,
            attr,
            value: value.to_string(),
            message: message.into(),
        }
    }

    /// An operand error.
    pub fn operand(op: &'static str, message: impl Into<String>) -> Self {
        OpError::Operand {
            op,
            message: message.into(),
        }
    }

    /// The message without the leading op name.
    fn detail(&self) -> String {
        match self {
            OpError::Attr {
                attr,
                value,
                message,
                ..
            } => format!("{attr}={value}: {message}"),
            OpError::Operand { message, .. } => message.clone(),
            OpError::Uop { source, .. } => source.to_string(),
        }
    }

    /// Converts for the `.uop` text layer, pointing at the attribute when there is one.
    /// The op's name is left out: the text layer starts the message with the call's.
    pub fn into_macro_error(self, attrs: &Attrs) -> MacroError {
        match &self {
            OpError::Attr { attr, .. } => attrs.error(attr, self.detail()),
            // Keeps the builder error, which the text layer may locate in the call.
            OpError::Uop { source, .. } => MacroError::from(source.clone()),
            OpError::Operand { .. } => MacroError::new(self.detail()),
        }
    }
}

/// Attaches the op's name to builder errors: `b.unary(..).op("softmax")?`.
pub trait Context<T> {
    /// Wraps a builder error as [`OpError::Uop`] of `op`.
    fn op(self, op: &'static str) -> Result<T, OpError>;
}

impl<T> Context<T> for Result<T, UopError> {
    fn op(self, op: &'static str) -> Result<T, OpError> {
        self.map_err(|source| OpError::Uop { op, source })
    }
}
