//! The CEL of a JWT issuer's configuration, compiled once when the issuer is built: claim
//! validation rules and claim mappings (user name, groups, uid, extra) over `claims`, and user
//! validation rules over `user`, evaluated as Kubernetes' JWT authenticator evaluates them.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::config::{JwtAuthenticator, PrefixedClaim};
use crate::user::UserInfo;
use strategy_host_cel::expression::{Activation, Error as CelError, Expression};

/// Why an issuer's CEL refused a token's claims or its user, worded as Kubernetes' JWT
/// authenticator words it.
#[derive(Debug, thiserror::Error)]
pub(super) enum ExpressionError {
    /// A mapping expression (`username`, `groups`, `uid`, `extra`) failed to evaluate.
    #[error("oidc: error evaluating {what} expression: {source}")]
    Evaluation {
        /// Which mapping.
        what: &'static str,
        /// Why.
        #[source]
        source: CelError,
    },
    /// A `username` or `uid` expression gave something else than a string.
    #[error("oidc: error evaluating {what} expression: {what} expression must return a string")]
    NotAString {
        /// Which mapping.
        what: &'static str,
    },
    /// A `groups` or `extra` expression gave something else than a string or strings.
    #[error(
        "oidc: error evaluating {what} expression: {what} expression must return a string or a list of strings"
    )]
    NotStrings {
        /// Which mapping.
        what: &'static str,
    },
    /// The `username` expression gave "".
    #[error("oidc: empty username via CEL expression is not allowed")]
    EmptyUsername,
    /// A claim or user validation rule failed to evaluate.
    #[error("oidc: error evaluating {what}: {source}")]
    RuleEvaluation {
        /// `claim validation expression` or `user info validation rule`.
        what: &'static str,
        /// Why.
        #[source]
        source: CelError,
    },
    /// A claim or user validation rule is false.
    #[error(
        "oidc: error evaluating {what}: validation expression '{expression}' failed: {message}"
    )]
    RuleFailed {
        /// `claim validation expression` or `user info validation rule`.
        what: &'static str,
        /// The rule's text.
        expression: String,
        /// The rule's message ("" when it has none).
        message: String,
    },
}

/// A rule: its expression, its text and its message.
struct Rule {
    expression: Expression,
    text: String,
    message: Option<String>,
}

/// One issuer's compiled expressions.
pub(super) struct ClaimExpressions {
    claim_rules: Vec<Rule>,
    username: Option<Expression>,
    groups: Option<Expression>,
    uid: Option<Expression>,
    extra: Vec<(String, Expression)>,
    user_rules: Vec<Rule>,
}

/// `mapping`'s expression, compiled (the configuration was checked to compile).
fn mapped(mapping: Option<&PrefixedClaim>) -> Option<Expression> {
    let text = mapping?.expression.as_deref()?;
    Expression::compile(text).ok()
}

fn rule(text: &str, message: Option<&String>) -> Option<Rule> {
    Some(Rule {
        expression: Expression::compile(text).ok()?,
        text: text.to_owned(),
        message: message.cloned(),
    })
}

/// A string, or each string of a list (what a groups or extra expression may answer).
fn strings(value: Value, what: &'static str) -> Result<Vec<String>, ExpressionError> {
    match value {
        Value::String(one) => Ok(vec![one]),
        Value::Null => Ok(Vec::new()),
        Value::Array(many) => many
            .into_iter()
            .map(|v| match v {
                Value::String(s) => Ok(s),
                _ => Err(ExpressionError::NotStrings { what }),
            })
            .collect(),
        _ => Err(ExpressionError::NotStrings { what }),
    }
}

impl ClaimExpressions {
    /// The expressions of `config`.
    pub(super) fn compile(config: &JwtAuthenticator) -> Self {
        let mappings = &config.claim_mappings;
        Self {
            claim_rules: config
                .claim_validation_rules
                .iter()
                .filter_map(|r| rule(r.expression.as_deref()?, r.message.as_ref()))
                .collect(),
            username: mapped(Some(&mappings.username)),
            groups: mapped(mappings.groups.as_ref()),
            uid: mapped(mappings.uid.as_ref()),
            extra: mappings
                .extra
                .iter()
                .filter_map(|e| {
                    Some((
                        e.key.clone(),
                        Expression::compile(&e.value_expression).ok()?,
                    ))
                })
                .collect(),
            user_rules: config
                .user_validation_rules
                .iter()
                .filter_map(|r| rule(&r.expression, r.message.as_ref()))
                .collect(),
        }
    }

    /// Checks the claim validation rules' expressions over `claims`.
    pub(super) fn check_claims(&self, claims: &Value) -> Result<(), ExpressionError> {
        hold(
            &self.claim_rules,
            "claims",
            claims,
            "claim validation expression",
        )
    }

    /// The user name, groups, uid and extra the expressions map `claims` to; `None` for each
    /// mapping that has no expression (the claim mapping decides).
    pub(super) fn map(&self, claims: &Value) -> Result<Mapped, ExpressionError> {
        let activation = Activation::new(&[("claims", claims)]);
        let evaluate = |expression: &Expression, what: &'static str| {
            activation
                .json(expression)
                .map_err(|source| ExpressionError::Evaluation { what, source })
        };
        let string = |expression: &Option<Expression>, what: &'static str| {
            let Some(expression) = expression else {
                return Ok(None);
            };
            match evaluate(expression, what)? {
                Value::String(s) => Ok(Some(s)),
                _ => Err(ExpressionError::NotAString { what }),
            }
        };
        let username = string(&self.username, "username")?;
        if username.as_deref() == Some("") {
            return Err(ExpressionError::EmptyUsername);
        }
        let groups = match &self.groups {
            Some(expression) => Some(strings(evaluate(expression, "groups")?, "groups")?),
            None => None,
        };
        let uid = string(&self.uid, "uid")?;
        let mut extra = BTreeMap::new();
        for (key, expression) in &self.extra {
            let values: Vec<String> = strings(evaluate(expression, "extra")?, "extra")?
                .into_iter()
                .filter(|v| !v.is_empty())
                .collect();
            if !values.is_empty() {
                extra.insert(key.clone(), values);
            }
        }
        Ok(Mapped {
            username,
            groups,
            uid,
            extra,
        })
    }

    /// Checks the user validation rules over the mapped `user`.
    pub(super) fn check_user(&self, user: &UserInfo) -> Result<(), ExpressionError> {
        if self.user_rules.is_empty() {
            return Ok(());
        }
        let variable = json!({
            "username": user.username, "uid": user.uid, "groups": user.groups, "extra": user.extra,
        });
        hold(
            &self.user_rules,
            "user",
            &variable,
            "user info validation rule",
        )
    }
}

/// Checks that every rule holds over `value` bound to `name`; the errors name `what`.
fn hold(
    rules: &[Rule],
    name: &str,
    value: &Value,
    what: &'static str,
) -> Result<(), ExpressionError> {
    if rules.is_empty() {
        return Ok(());
    }
    let activation = Activation::new(&[(name, value)]);
    for rule in rules {
        let holds = activation
            .truth(&rule.expression)
            .map_err(|source| ExpressionError::RuleEvaluation { what, source })?;
        if !holds {
            return Err(ExpressionError::RuleFailed {
                what,
                expression: rule.text.clone(),
                message: rule.message.clone().unwrap_or_default(),
            });
        }
    }
    Ok(())
}

/// What the expressions mapped (`None`: no expression for it).
pub(super) struct Mapped {
    pub(super) username: Option<String>,
    pub(super) groups: Option<Vec<String>>,
    pub(super) uid: Option<String>,
    pub(super) extra: BTreeMap<String, Vec<String>>,
}
