// Command deployment is the Go port of strategies/deployment (the Rust `deployments` module):
// a Deployment-like workload strategy that defaults replicas and the rollout strategy,
// validates replicas and that the selector matches the template's labels, keeps the selector
// immutable and the status untouched by main-resource updates. Like the Rust module it works on
// a LazyObject and answers every request as that module does, so the host can compare the two.
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o deployments-go.wasm ./deployment
package main

import "strategyhost.dev/sdk"

func init() {
	sdk.Register(sdk.Strategy[sdk.LazyObject]{
		Name: "deployments-go",
		Resources: []sdk.Resource{{
			Group: "apps.example.com", Version: "v1", Kind: "Deployment", Plural: "deployments",
			Scope: sdk.Namespaced,
		}},
		Impl: Deployments{},
	})
}

func main() {}
