//! The service's errors and their one mapping to gRPC statuses.
//!
//! | error | gRPC code | details |
//! |---|---|---|
//! | [`ServiceError::Invalid`] (R9, bad input) | `INVALID_ARGUMENT` | `google.rpc.BadRequest` with the field path and reason |
//! | [`ServiceError::GameOver`] (R9) | `FAILED_PRECONDITION` | `google.rpc.ErrorInfo` reason `GAME_OVER`, domain `tavli.v1`, metadata `winner`, `points`, `reason` |
//! | [`ServiceError::Unimplemented`] (no evaluator) | `UNIMPLEMENTED` | |
//! | [`ServiceError::DeadlineExceeded`] | `DEADLINE_EXCEEDED` | the message names the limit that passed |
//! | [`ServiceError::Cancelled`] | `CANCELLED` | |
//! | [`ServiceError::ResourceExhausted`] (a limit of the server) | `RESOURCE_EXHAUSTED` | |
//! | [`ServiceError::Unavailable`] (shutting down) | `UNAVAILABLE` | |
//! | [`ServiceError::Internal`] | `INTERNAL` | |

use crate::eval::{CancelToken, EvalError};
use crate::rules::{Outcome, RulesError};
use std::collections::HashMap;
use std::fmt;
use tonic::{Code, Status};
use tonic_types::{ErrorDetails, StatusExt};

/// The `google.rpc.ErrorInfo` domain of this service's errors.
pub const ERROR_DOMAIN: &str = "tavli.v1";

/// An error of a service call, before it becomes a `tonic::Status`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ServiceError {
    /// Malformed input: `field` is the request field path (`position.structured.points[4]`,
    /// `dice.die1`, `play`, ...), `reason` says what is wrong.
    Invalid { field: String, reason: String },
    /// The position's game is already over (R9).
    GameOver(Outcome),
    /// The operation is not available (e.g. no evaluator is loaded).
    Unimplemented(String),
    /// The request's deadline passed; the message says whose (the service names the
    /// limit, [`super::limits::Deadline::name`]; the work only knows it passed).
    DeadlineExceeded(String),
    /// The work was cancelled (the client went away or the server is shutting down).
    Cancelled,
    /// A limit of the server refused the work (retry later); the message says which.
    ResourceExhausted(String),
    /// The server cannot do the work now (it is shutting down): retry elsewhere.
    Unavailable(String),
    /// A bug or an unexpected failure.
    Internal(String),
}

impl ServiceError {
    /// `Cancelled` turned into `Unavailable` ("the server is shutting down: `what`
    /// stopped; retry") when `token`, the request's token, was cancelled by the
    /// server's (the drain ended): the client did not cancel, and may retry elsewhere.
    pub fn shutdown_if(self, token: &CancelToken, what: &str) -> ServiceError {
        match self {
            ServiceError::Cancelled if token.parent_cancelled() => ServiceError::Unavailable(
                format!("the server is shutting down: {what} stopped; retry"),
            ),
            e => e,
        }
    }

    /// Shorthand for [`ServiceError::Invalid`].
    pub fn invalid(field: impl Into<String>, reason: impl Into<String>) -> ServiceError {
        ServiceError::Invalid {
            field: field.into(),
            reason: reason.into(),
        }
    }

    /// Prefixes the field path of an [`ServiceError::Invalid`] with `prefix`
    /// (`points[4]` under `position.structured` → `position.structured.points[4]`).
    /// Other errors are returned unchanged.
    pub fn at(self, prefix: &str) -> ServiceError {
        match self {
            ServiceError::Invalid { field, reason } => ServiceError::Invalid {
                field: join_path(prefix, &field),
                reason,
            },
            other => other,
        }
    }

    /// The gRPC code of this error.
    pub fn code(&self) -> Code {
        match self {
            ServiceError::Invalid { .. } => Code::InvalidArgument,
            ServiceError::GameOver(_) => Code::FailedPrecondition,
            ServiceError::Unimplemented(_) => Code::Unimplemented,
            ServiceError::DeadlineExceeded(_) => Code::DeadlineExceeded,
            ServiceError::Cancelled => Code::Cancelled,
            ServiceError::ResourceExhausted(_) => Code::ResourceExhausted,
            ServiceError::Unavailable(_) => Code::Unavailable,
            ServiceError::Internal(_) => Code::Internal,
        }
    }
}

/// Joins two field paths: `a` + `b` → `a.b`, `a` + `[3]` → `a[3]`, empty parts dropped.
pub fn join_path(prefix: &str, field: &str) -> String {
    match (prefix.is_empty(), field.is_empty()) {
        (true, _) => field.to_string(),
        (false, true) => prefix.to_string(),
        _ if field.starts_with('[') => format!("{prefix}{field}"),
        _ => format!("{prefix}.{field}"),
    }
}

impl fmt::Display for ServiceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServiceError::Invalid { field, reason } => write!(f, "{field}: {reason}"),
            ServiceError::GameOver(o) => write!(f, "the game is already over: {o}"),
            ServiceError::Unimplemented(s) => f.write_str(s),
            ServiceError::DeadlineExceeded(s) => f.write_str(s),
            ServiceError::Cancelled => f.write_str("cancelled"),
            ServiceError::ResourceExhausted(s) | ServiceError::Unavailable(s) => f.write_str(s),
            ServiceError::Internal(s) => write!(f, "internal error: {s}"),
        }
    }
}

impl std::error::Error for ServiceError {}

impl From<RulesError> for ServiceError {
    fn from(e: RulesError) -> Self {
        match e {
            RulesError::Invalid { field, reason } => ServiceError::Invalid { field, reason },
            RulesError::GameOver(o) => ServiceError::GameOver(o),
        }
    }
}

impl From<EvalError> for ServiceError {
    fn from(e: EvalError) -> Self {
        match e {
            EvalError::Rules(r) => r.into(),
            EvalError::DeadlineExceeded => {
                ServiceError::DeadlineExceeded("deadline exceeded".into())
            }
            EvalError::Cancelled => ServiceError::Cancelled,
            EvalError::Unavailable(s) => {
                ServiceError::Unimplemented(format!("evaluation unavailable: {s}"))
            }
        }
    }
}

impl From<ServiceError> for Status {
    fn from(e: ServiceError) -> Self {
        let message = e.to_string();
        match e {
            ServiceError::Invalid { field, reason } => Status::with_error_details(
                Code::InvalidArgument,
                message,
                ErrorDetails::with_bad_request_violation(field, reason),
            ),
            ServiceError::GameOver(o) => {
                let metadata = HashMap::from([
                    (
                        "winner".to_string(),
                        o.winner.map_or("none", |w| w.name()).to_string(),
                    ),
                    ("points".to_string(), o.points.to_string()),
                    ("reason".to_string(), o.reason.name().to_string()),
                ]);
                Status::with_error_details(
                    Code::FailedPrecondition,
                    message,
                    ErrorDetails::with_error_info("GAME_OVER", ERROR_DOMAIN, metadata),
                )
            }
            other => Status::new(other.code(), message),
        }
    }
}

impl From<RulesError> for Status {
    fn from(e: RulesError) -> Self {
        ServiceError::from(e).into()
    }
}

impl From<EvalError> for Status {
    fn from(e: EvalError) -> Self {
        ServiceError::from(e).into()
    }
}

/// Adds a field-path prefix to the error of a result (see [`ServiceError::at`]).
pub trait AtField<T> {
    /// Converts the error into a [`ServiceError`] whose field path is under `prefix`.
    fn at(self, prefix: &str) -> Result<T, ServiceError>;
}

impl<T, E: Into<ServiceError>> AtField<T> for Result<T, E> {
    fn at(self, prefix: &str) -> Result<T, ServiceError> {
        self.map_err(|e| e.into().at(prefix))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::{OutcomeReason, Side};

    #[test]
    fn paths_join() {
        assert_eq!(
            join_path("position.structured", "points[4]"),
            "position.structured.points[4]"
        );
        assert_eq!(join_path("play.moves.moves", "[2]"), "play.moves.moves[2]");
        assert_eq!(join_path("", "dice.die1"), "dice.die1");
        assert_eq!(join_path("play", ""), "play");
    }

    #[test]
    fn invalid_carries_bad_request() {
        let s: Status = RulesError::invalid("dice.die1", "die must be 1..6, got 7").into();
        assert_eq!(s.code(), Code::InvalidArgument);
        assert_eq!(s.message(), "dice.die1: die must be 1..6, got 7");
        let br = s.get_details_bad_request().expect("BadRequest");
        assert_eq!(br.field_violations[0].field, "dice.die1");
    }

    #[test]
    fn game_over_carries_error_info() {
        let o = Outcome {
            winner: Some(Side::Black),
            points: 2,
            reason: OutcomeReason::Mars,
        };
        let s: Status = RulesError::GameOver(o).into();
        assert_eq!(s.code(), Code::FailedPrecondition);
        assert!(s.message().contains("black wins 2"), "{}", s.message());
        let info = s.get_details_error_info().expect("ErrorInfo");
        assert_eq!(info.reason, "GAME_OVER");
        assert_eq!(info.metadata["winner"], "black");
    }
}
