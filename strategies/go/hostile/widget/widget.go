// Package widget registers the hostile fixtures: each is a strategy of Widgets
// (example.com/v1, namespaced) named hostile-go-<name>, whose Validate misbehaves, so the host's
// tests can check that a misbehaving Go module is contained.
package widget

import "strategyhost.dev/sdk"

// Register makes impl the module's strategy, named hostile-go-<name>.
func Register(name string, impl any) {
	sdk.Register(sdk.Strategy[map[string]any]{
		Name: "hostile-go-" + name,
		Resources: []sdk.Resource{{
			Group: "example.com", Version: "v1", Kind: "Widget", Plural: "widgets", Scope: sdk.Namespaced,
		}},
		Impl: impl,
	})
}
