// Command owner-label is an admission policy written in Go, the port of the Rust example
// strategies/owner-label: every namespaced object created or updated outside kube-system names
// its owner in the owner label. One policy across every resource, built-in kinds and custom
// resources alike, declared as a Kubernetes ValidatingAdmissionPolicyBinding would declare it.
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o owner-label-go.wasm ./owner-label
package main

import "strategyhost.dev/sdk"

// OwnerLabel is the label every object must carry.
const OwnerLabel = "owner"

// Match is every namespaced create and update (subresources such as status are not named),
// in namespaces whose kubernetes.io/metadata.name label is not kube-system.
var Match = sdk.MatchResources{
	ResourceRules: []sdk.Rule{{
		Operations: []string{"CREATE", "UPDATE"}, APIGroups: []string{"*"},
		APIVersions: []string{"*"}, Resources: []string{"*"}, Scope: sdk.NamespacedScope,
	}},
	NamespaceSelector: sdk.LabelSelector{MatchExpressions: []sdk.LabelRequirement{{
		Key: "kubernetes.io/metadata.name", Operator: "NotIn", Values: []string{"kube-system"},
	}}},
}

// ownerLabel is the policy.
type ownerLabel struct{}

// Validate refuses an object without a non-empty owner label.
func (ownerLabel) Validate(_ *sdk.Context, r *sdk.AdmissionRequest[map[string]any]) []sdk.FieldError {
	if r.Object != nil && sdk.Labels(*r.Object)[OwnerLabel] != "" {
		return nil
	}
	path := sdk.NewFieldPath("metadata").Child("labels").Key(OwnerLabel)
	return []sdk.FieldError{sdk.Required(path, "every namespaced object outside kube-system names its owner")}
}

func init() {
	sdk.RegisterPolicy(sdk.Policy[map[string]any]{Name: "owner-label-go", Match: Match, Impl: ownerLabel{}})
}

func main() {}
