package sdk

import (
	"slices"

	"strategyhost.dev/sdk/abi"
)

// Context is what every hook is told about the request.
type Context struct {
	// Resource is the resource the call is about.
	Resource ResourceInfo
	// DryRun is ?dryRun=All: nothing will be persisted (After hooks should not act).
	DryRun bool
	// RequestID is the request's id, which the host also tags this module's log lines with.
	RequestID string
	// User is who makes the request (since ABI 1.1; empty from an older host).
	User UserInfo
}

// ResourceInfo is the resource a call is about, as the host describes it.
type ResourceInfo struct {
	Group string
	// Version is the version the request was made at.
	Version string
	Kind    string
	Plural  string
	// Namespaced tells whether objects live in namespaces.
	Namespaced bool
}

// UserInfo is who makes a request, as the host's authentication established it (Kubernetes'
// user.Info): a client, or the server itself (system:apiserver) for the writes it makes on its
// own. A host older than ABI 1.1 never says: every field is then empty, so treat an empty
// Username as "unknown", never as a user.
type UserInfo struct {
	// Username is e.g. alice, system:serviceaccount:<namespace>:<name>, system:anonymous.
	Username string
	// UID is a unique id (a ServiceAccount's uid); empty when the authenticator has none.
	UID string
	// Groups are e.g. system:authenticated, system:masters.
	Groups []string
	// Extra are further attributes an authenticator adds (a ServiceAccount token's pod name).
	Extra map[string][]string
}

// InGroup tells whether the user is in group.
func (u *UserInfo) InGroup(group string) bool {
	return slices.Contains(u.Groups, group)
}

func newContext(c *abi.Context) *Context {
	ctx := &Context{Resource: ResourceInfo{Namespaced: true}}
	if c == nil {
		return ctx
	}
	if r := c.Resource; r != nil {
		ctx.Resource = ResourceInfo{
			Group: r.Group, Version: r.Version, Kind: r.Kind, Plural: r.Plural,
			Namespaced: r.Scope != abi.ScopeCluster,
		}
	}
	ctx.DryRun = c.DryRun
	ctx.RequestID = c.RequestID
	if u := c.User; u != nil {
		ctx.User = UserInfo{Username: u.Username, UID: u.UID, Groups: u.Groups, Extra: u.Extra}
	}
	return ctx
}
