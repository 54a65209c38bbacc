//! RBAC: the `rbac.authorization.k8s.io/v1` kinds (Roles, ClusterRoles, RoleBindings,
//! ClusterRoleBindings) and the authorizer that decides by them.

pub mod authorizer;
pub mod escalation;
pub mod index;
pub mod policy;

pub use authorizer::RbacAuthorizer;
pub use index::RbacKind;
