package sdk

import "strategyhost.dev/sdk/abi"

// ABIVersion is the ABI's major version this SDK speaks; the host refuses a module whose
// manifest names another.
const ABIVersion = 1

// ABIMinorVersion is the ABI's minor version this SDK builds modules for, the Rust SDK's: 5
// (1.1 added Context.User, 1.2 admission policies, 1.3 version conversion, 1.4 changed objects
// answered as a JSON Patch, which this SDK does not send, 1.5 authorizers). A host loads a
// module whose minor version is at most its own.
const ABIMinorVersion = 5

// Strategy describes a module: what its manifest says, and the value whose methods are its
// hooks. T is the object type the hooks see: map[string]any (numbers as json.Number), any, or a
// struct decoded with encoding/json.
type Strategy[T any] struct {
	// Name is the module's name, for the host's logs, metrics and errors.
	Name string
	// Resources are the resources this module is the strategy of.
	Resources []Resource
	// Operations overrides the operations the manifest lists. When nil they are derived from
	// Impl: the nine before-write operations (BeforeWrite, as the Rust SDK lists by default),
	// then BeforeDelete, the After hooks and Convert when Impl implements them.
	Operations []Operation
	// HostFunctions are the host functions the module calls besides log (always granted).
	HostFunctions []HostFunction
	// Applies are the resources (group and kind) the After hooks may create or update with
	// Apply; it needs HostApply in HostFunctions.
	Applies []GroupKind
	// Impl is the implementation: any value, whose methods named after the hooks
	// (PrepareForCreator, Validator, ...) are called. A hook it lacks keeps Kubernetes' default.
	Impl any
}

// Resource is a resource a module is the strategy of, as its manifest names it.
type Resource struct {
	// Group is the API group, e.g. apps.example.com ("" for the core group).
	Group string
	// Version is the version served, e.g. v1.
	Version string
	// Kind is e.g. Widget.
	Kind string
	// Plural is the plural resource name, e.g. widgets.
	Plural string
	// Scope is Namespaced or Cluster.
	Scope Scope
}

// GroupKind names a resource by API group and kind, whatever its version: what Strategy.Applies
// lists. The core group is "".
type GroupKind struct {
	Group string
	Kind  string
}

// Scope is where objects of a resource live.
type Scope = abi.Scope

// The scopes.
const (
	Namespaced = abi.ScopeNamespaced
	Cluster    = abi.ScopeCluster
)

// Operation is a strategy operation or hook a manifest lists.
type Operation = abi.Operation

// The operations.
const (
	OpPrepareForCreate         = abi.OperationPrepareForCreate
	OpValidate                 = abi.OperationValidate
	OpWarningsOnCreate         = abi.OperationWarningsOnCreate
	OpCanonicalize             = abi.OperationCanonicalize
	OpPrepareForUpdate         = abi.OperationPrepareForUpdate
	OpValidateUpdate           = abi.OperationValidateUpdate
	OpWarningsOnUpdate         = abi.OperationWarningsOnUpdate
	OpAllowCreateOnUpdate      = abi.OperationAllowCreateOnUpdate
	OpAllowUnconditionalUpdate = abi.OperationAllowUnconditionalUpdate
	OpBeforeDelete             = abi.OperationBeforeDelete
	OpAfterCreate              = abi.OperationAfterCreate
	OpAfterUpdate              = abi.OperationAfterUpdate
	OpAfterDelete              = abi.OperationAfterDelete
	OpConvert                  = abi.OperationConvert
)

// BeforeWrite is every before-write operation except BeforeDelete: what a manifest lists
// whatever Impl implements (the Rust SDK's default), since their defaults are answers too.
var BeforeWrite = []Operation{
	OpPrepareForCreate, OpValidate, OpWarningsOnCreate, OpCanonicalize, OpPrepareForUpdate,
	OpValidateUpdate, OpWarningsOnUpdate, OpAllowCreateOnUpdate, OpAllowUnconditionalUpdate,
}

// HostFunction is a host function a module asks for.
type HostFunction = abi.HostFunction

// The host functions (HostLog is always granted).
const (
	HostLog   = abi.HostFunctionLog
	HostGet   = abi.HostFunctionGet
	HostList  = abi.HostFunctionList
	HostApply = abi.HostFunctionApply
)
