package main

import (
	"testing"

	"strategyhost.dev/sdk"
	"strategyhost.dev/sdk/abi"
)

// BenchmarkCreatePhase times the create phase on the 1 KiB Deployment of the host's
// go_strategy bench, natively, through the same Handle the module's call export runs:
// `go test -run XXX -bench . ./deployment`.
func BenchmarkCreatePhase(b *testing.B) {
	obj := []byte(`{"apiVersion":"apps.example.com/v1","kind":"Deployment","metadata":{"name":"web","namespace":"default","labels":{"app":"web","team":"storefront"},"annotations":{"example.com/owner":"storefront-team@example.com","example.com/padding":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}},"spec":{"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web","tier":"frontend"}},"spec":{"containers":[{"name":"web","image":"registry.example.com/storefront/web:1.25.3","ports":[{"containerPort":8080,"protocol":"TCP"}],"env":[{"name":"MODE","value":"production"}]}]}}}}`)
	req := (&abi.Request{Arm: abi.ArmBeforeCreate, Object: obj}).Marshal()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		sdk.Handle(req)
	}
}
