package sdk

// An authorizer (ABI 1.5): asked, where the server's authorization configuration names it,
// whether a request may proceed (the question an authorization webhook is sent as a
// SubjectAccessReview), and answering allow, deny or no opinion. The Rust SDK's Authorizer
// trait, in Go's terms.

import (
	"errors"
	"slices"

	"strategyhost.dev/sdk/abi"
)

// AccessRequest is a SubjectAccessReview's spec: who asks to do what.
type AccessRequest struct {
	User   string              `json:"user"`
	Groups []string            `json:"groups"`
	UID    string              `json:"uid"`
	Extra  map[string][]string `json:"extra"`
	// Resource is set for a request about a resource.
	Resource *ResourceAttributes `json:"resourceAttributes"`
	// NonResource is set for a request about a path (/healthz, /metrics).
	NonResource *NonResourceAttributes `json:"nonResourceAttributes"`
}

// InGroup tells whether the requester is in group.
func (r *AccessRequest) InGroup(group string) bool { return slices.Contains(r.Groups, group) }

// ResourceAttributes are a resource request's attributes.
type ResourceAttributes struct {
	Namespace   string `json:"namespace"`
	Verb        string `json:"verb"`
	Group       string `json:"group"`
	Version     string `json:"version"`
	Resource    string `json:"resource"`
	Subresource string `json:"subresource"`
	Name        string `json:"name"`
}

// NonResourceAttributes are a non-resource request's attributes.
type NonResourceAttributes struct {
	Path string `json:"path"`
	Verb string `json:"verb"`
}

// Decision is an authorizer's answer: Allow, Deny (each with a reason for the audit log and the
// client) or NoOpinion (the next authorizer decides).
type Decision struct {
	allowed, denied bool
	reason          string
}

// Allow lets the request proceed; no later authorizer is asked.
func Allow(reason string) Decision { return Decision{allowed: true, reason: reason} }

// Deny refuses the request (403); no later authorizer is asked.
func Deny(reason string) Decision { return Decision{denied: true, reason: reason} }

// NoOpinion leaves the request to the next authorizer.
func NoOpinion() Decision { return Decision{} }

// AuthorizerFailurePolicy is what a failed call decides: AuthorizerNoOpinion (the default) or
// AuthorizerDeny, as a webhook authorizer's failurePolicy.
type AuthorizerFailurePolicy string

// The authorizer failure policies.
const (
	AuthorizerNoOpinion AuthorizerFailurePolicy = "NoOpinion"
	AuthorizerDeny      AuthorizerFailurePolicy = "Deny"
)

// Authorizer describes an authorizer module.
type Authorizer struct {
	// Name is the authorizer's name, as the authorization configuration names it.
	Name string
	// FailurePolicy is what a failed call decides; "" is AuthorizerNoOpinion.
	FailurePolicy AuthorizerFailurePolicy
	// Authorize decides one request.
	Authorize func(ctx *Context, request *AccessRequest) Decision
}

// NewAuthorizerHandler checks an authorizer and builds its handler. It panics when it has no
// Name or no Authorize.
func NewAuthorizerHandler(a Authorizer) *Handler {
	if a.Name == "" {
		panic("sdk: the authorizer has no Name")
	}
	if a.Authorize == nil {
		panic("sdk: authorizer " + a.Name + " has no Authorize")
	}
	failurePolicy := a.FailurePolicy
	if failurePolicy == "" {
		failurePolicy = AuthorizerNoOpinion
	}
	m := newManifest(a.Name, []Operation{abi.OperationAuthorize})
	m.Authorizer = &abi.Authorizer{FailurePolicy: string(failurePolicy)}
	run := func(ctx *Context, req *abi.Request) (*abi.Response, error) {
		if req.Arm != abi.ArmAuthorize || req.Authorize == nil {
			return nil, errors.New("an authorizer is only asked to authorize")
		}
		spec, err := decodeObject[AccessRequest]("spec", req.Authorize.Spec)
		if err != nil {
			return nil, err
		}
		d := a.Authorize(ctx, spec)
		return &abi.Response{Allowed: d.allowed, Denied: d.denied, Reason: d.reason}, nil
	}
	return &Handler{manifest: m.Marshal(), run: run}
}

// RegisterAuthorizer makes an authorizer the module's (see Register).
func RegisterAuthorizer(a Authorizer) {
	register(NewAuthorizerHandler(a))
}
