package sdk

// An admission policy: one module asked about every write its match names, of any resource, as
// a Kubernetes ValidatingAdmissionPolicy with its binding (ABI 1.2). The Rust SDK's
// AdmissionPolicy trait, in Go's terms.

import (
	"encoding/json"
	"errors"
	"fmt"

	"strategyhost.dev/sdk/abi"
)

// RuleScope is which resources a Rule names by scope (Kubernetes' scope): AllScopes,
// NamespacedScope or ClusterScope.
type RuleScope string

// The rule scopes.
const (
	AllScopes       RuleScope = "*"
	NamespacedScope RuleScope = "Namespaced"
	ClusterScope    RuleScope = "Cluster"
)

// Rule is one resource rule (Kubernetes' NamedRuleWithOperations): the operations (CREATE,
// UPDATE, DELETE, *), API groups ("" is the core group), versions and resources (configmaps, *,
// deployments/status, */*) it names. "*" names every value; an empty Scope is AllScopes.
type Rule struct {
	Operations  []string
	APIGroups   []string
	APIVersions []string
	Resources   []string
	Scope       RuleScope
}

// LabelRequirement is one requirement of a label selector: Key with Operator In or NotIn (over
// Values), Exists or DoesNotExist.
type LabelRequirement struct {
	Key      string
	Operator string
	Values   []string
}

// LabelSelector is a Kubernetes label selector; the zero one selects everything.
type LabelSelector struct {
	MatchLabels      map[string]string
	MatchExpressions []LabelRequirement
}

// MatchResources is which writes a policy is asked about (Kubernetes' MatchResources): those a
// resource rule names and no exclusion does, in a namespace NamespaceSelector selects
// (cluster-scoped objects always pass it), of an object ObjectSelector selects (old or new).
type MatchResources struct {
	ResourceRules        []Rule
	ExcludeResourceRules []Rule
	NamespaceSelector    LabelSelector
	ObjectSelector       LabelSelector
	// ExactVersions is Kubernetes' matchPolicy Exact; false (the default) is Equivalent: a rule
	// naming another version of the same resource matches too.
	ExactVersions bool
}

// MatchCondition is a CEL condition the write must meet for the policy to be asked (Kubernetes'
// matchConditions), over object, oldObject, request and namespaceObject.
type MatchCondition struct {
	Name       string
	Expression string
}

// ValidationAction is what a policy's refusal does (Kubernetes' validationActions).
type ValidationAction string

// The validation actions.
const (
	// ActionDeny fails the write (422, with the policy's causes).
	ActionDeny ValidationAction = "Deny"
	// ActionWarn lets the write go on with a warning for the client.
	ActionWarn ValidationAction = "Warn"
	// ActionAudit lets the write go on; the host logs and counts the refusal.
	ActionAudit ValidationAction = "Audit"
)

// FailurePolicy is what a failed call (a trap, a deadline, garbage) does to the write.
type FailurePolicy string

// The failure policies.
const (
	// Fail fails the write (the default).
	Fail FailurePolicy = "Fail"
	// Ignore lets the write go on as if the policy had admitted it.
	Ignore FailurePolicy = "Ignore"
)

// AdmissionOperation is what the write does: AdmissionCreate, AdmissionUpdate (an update, patch
// or apply) or AdmissionDelete.
type AdmissionOperation string

// The admission operations, as Kubernetes names them.
const (
	AdmissionCreate AdmissionOperation = "CREATE"
	AdmissionUpdate AdmissionOperation = "UPDATE"
	AdmissionDelete AdmissionOperation = "DELETE"
)

// AdmissionRequest is one write as a policy sees it; the resource and the requester are in the
// call's Context.
type AdmissionRequest[T any] struct {
	Operation AdmissionOperation
	// Namespace is the object's namespace ("" for a cluster-scoped one).
	Namespace string
	Name      string
	// Subresource is the subresource written (status), or "".
	Subresource string
	// Object is the object as it would be stored (nil for a delete). A mutating policy changes
	// it.
	Object *T
	// OldObject is the object before an update, or the one being deleted.
	OldObject *T
}

// Policy describes an admission policy module: what its manifest declares, and the value whose
// methods (AdmissionMutator, AdmissionValidator, AdmissionWarner) are its hooks. T is the type
// objects decode into: map[string]any for a policy across kinds, or a struct of just the fields
// it reads.
type Policy[T any] struct {
	// Name is the policy's name, for messages, logs and metrics.
	Name string
	// Match is which writes the policy is asked about.
	Match MatchResources
	// MatchConditions must all hold too.
	MatchConditions []MatchCondition
	// Actions is what a refusal does; nil is ActionDeny.
	Actions []ValidationAction
	// FailurePolicy is what a failed call does; "" is Fail.
	FailurePolicy FailurePolicy
	// Impl is the implementation. Implementing AdmissionMutator makes the policy a mutating one,
	// run with the mutating admission plugins before the written resource's strategy; its
	// Validate and Warnings run with the validating ones, after it.
	Impl any
}

// AdmissionMutator changes request.Object before the written resource's strategy runs (creates
// and updates).
type AdmissionMutator[T any] interface {
	Mutate(ctx *Context, request *AdmissionRequest[T])
}

// AdmissionValidator refuses a write with one error per cause; none admits it.
type AdmissionValidator[T any] interface {
	Validate(ctx *Context, request *AdmissionRequest[T]) []FieldError
}

// AdmissionWarner answers warnings for the client about a write the policy admits.
type AdmissionWarner[T any] interface {
	Warnings(ctx *Context, request *AdmissionRequest[T]) []string
}

// NewPolicyHandler checks a policy and builds its handler. It panics when the policy has no
// name or no resource rule, or (natively, as NewHandler) when Impl has a method named Mutate,
// Validate or Warnings with another signature than the hook's.
func NewPolicyHandler[T any](p Policy[T]) *Handler {
	if p.Name == "" {
		panic("sdk: the policy has no Name")
	}
	if len(p.Match.ResourceRules) == 0 {
		panic("sdk: policy " + p.Name + " matches no resource rule")
	}
	checkPolicySignatures[T](p.Impl)
	mutator, mutates := p.Impl.(AdmissionMutator[T])
	ops := []Operation{abi.OperationAdmitValidate}
	if mutates {
		ops = []Operation{abi.OperationAdmitMutate, abi.OperationAdmitValidate}
	}
	actions := p.Actions
	if actions == nil {
		actions = []ValidationAction{ActionDeny}
	}
	failurePolicy := p.FailurePolicy
	if failurePolicy == "" {
		failurePolicy = Fail
	}
	declaration := &abi.AdmissionPolicy{
		MatchResources: p.Match.json(),
		FailurePolicy:  string(failurePolicy),
	}
	for _, c := range p.MatchConditions {
		declaration.MatchConditions = append(declaration.MatchConditions,
			abi.MatchCondition{Name: c.Name, Expression: c.Expression})
	}
	for _, a := range actions {
		declaration.ValidationActions = append(declaration.ValidationActions, string(a))
	}
	m := newManifest(p.Name, ops)
	m.AdmissionPolicy = declaration
	validator, _ := p.Impl.(AdmissionValidator[T])
	warner, _ := p.Impl.(AdmissionWarner[T])
	run := func(ctx *Context, req *abi.Request) (*abi.Response, error) {
		if req.Arm != abi.ArmAdmit || req.Admit == nil {
			return nil, errors.New("an admission policy is only asked to admit")
		}
		return admit(ctx, req.Admit, mutator, validator, warner)
	}
	return &Handler{manifest: m.Marshal(), run: run}
}

// RegisterPolicy makes an admission policy the module's (see Register).
func RegisterPolicy[T any](p Policy[T]) {
	register(NewPolicyHandler(p))
}

// admit answers one write: in the mutating phase the object after Mutate, in the validating
// phase Validate's errors and, when it admits, the warnings.
func admit[T any](ctx *Context, a *abi.AdmitRequest, mutator AdmissionMutator[T],
	validator AdmissionValidator[T], warner AdmissionWarner[T]) (*abi.Response, error) {
	request := AdmissionRequest[T]{
		Operation: AdmissionOperation(a.Operation), Namespace: a.Namespace, Name: a.Name,
		Subresource: a.Subresource,
	}
	switch request.Operation {
	case AdmissionCreate, AdmissionUpdate, AdmissionDelete:
	default:
		return nil, fmt.Errorf("unknown admission operation %q", a.Operation)
	}
	var err error
	if len(a.Object) > 0 {
		if request.Object, err = decodeObject[T]("object", a.Object); err != nil {
			return nil, err
		}
	}
	if len(a.OldObject) > 0 {
		if request.OldObject, err = decodeObject[T]("old object", a.OldObject); err != nil {
			return nil, err
		}
	}
	resp := &abi.Response{}
	switch a.Phase {
	case abi.AdmissionPhaseMutate:
		if mutator != nil {
			mutator.Mutate(ctx, &request)
		}
		if request.Object != nil {
			if err = answerObject(resp, request.Object); err != nil {
				return nil, err
			}
		}
	case abi.AdmissionPhaseValidate:
		if validator != nil {
			resp.FieldErrors = toABI(validator.Validate(ctx, &request))
		}
		if len(resp.FieldErrors) == 0 && warner != nil {
			resp.Warnings = warner.Warnings(ctx, &request)
		}
	default:
		return nil, errors.New("the request names no phase")
	}
	return resp, nil
}

// json is the JSON of Kubernetes' MatchResources, as the manifest carries it: every list and
// map present, as the Rust SDK writes it.
func (m MatchResources) json() []byte {
	policy := "Equivalent"
	if m.ExactVersions {
		policy = "Exact"
	}
	out, err := json.Marshal(map[string]any{
		"resourceRules":        rulesJSON(m.ResourceRules),
		"excludeResourceRules": rulesJSON(m.ExcludeResourceRules),
		"namespaceSelector":    m.NamespaceSelector.jsonValue(),
		"objectSelector":       m.ObjectSelector.jsonValue(),
		"matchPolicy":          policy,
	})
	if err != nil {
		panic("sdk: encoding a policy's match: " + err.Error())
	}
	return out
}

func rulesJSON(rules []Rule) []any {
	out := []any{}
	for _, r := range rules {
		scope := r.Scope
		if scope == "" {
			scope = AllScopes
		}
		out = append(out, map[string]any{
			"operations": nonNil(r.Operations), "apiGroups": nonNil(r.APIGroups),
			"apiVersions": nonNil(r.APIVersions), "resources": nonNil(r.Resources),
			"scope": scope,
		})
	}
	return out
}

func (s LabelSelector) jsonValue() map[string]any {
	labels := map[string]string{}
	for k, v := range s.MatchLabels {
		labels[k] = v
	}
	expressions := []any{}
	for _, r := range s.MatchExpressions {
		expressions = append(expressions, map[string]any{
			"key": r.Key, "operator": r.Operator, "values": nonNil(r.Values),
		})
	}
	return map[string]any{"matchLabels": labels, "matchExpressions": expressions}
}

// nonNil is values, or an empty list for nil (JSON [] rather than null).
func nonNil(values []string) []string {
	if values == nil {
		return []string{}
	}
	return values
}
