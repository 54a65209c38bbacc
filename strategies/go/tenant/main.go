// Command tenant is a Go strategy with After hooks, for cluster-scoped Tenants
// (example.com/v1): a tenant's name must be a DNS-1123 label, because creating a tenant makes
// sure a namespace of that name exists (labelled example.com/tenant: <name>), through the host's
// get and apply; deleting one writes an audit line to the host's log.
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o tenants-go.wasm ./tenant
package main

import (
	"errors"
	"fmt"

	"strategyhost.dev/sdk"
)

// TenantLabel labels a tenant's namespace with the tenant's name.
const TenantLabel = "example.com/tenant"

// Tenants is the strategy.
type Tenants struct{}

// TenantNamespace is the namespace of a new tenant.
func TenantNamespace(tenant string) map[string]any {
	return map[string]any{
		"apiVersion": "v1",
		"kind":       "Namespace",
		"metadata": map[string]any{
			"name":   tenant,
			"labels": map[string]any{TenantLabel: tenant},
		},
	}
}

// Validate requires a name that can name a namespace.
func (Tenants) Validate(_ *sdk.Context, obj *map[string]any) []sdk.FieldError {
	path := sdk.NewFieldPath("metadata").Child("name")
	name, ok := sdk.Name(*obj)
	if !ok {
		return []sdk.FieldError{sdk.Required(path, "a tenant needs a name")}
	}
	var errs []sdk.FieldError
	for _, msg := range sdk.DNS1123LabelErrors(name) {
		errs = append(errs, sdk.Invalid(path, name, msg))
	}
	return errs
}

// AfterCreate makes sure the tenant's namespace exists. One that exists is left as it is:
// applying ours would replace its labels.
func (Tenants) AfterCreate(ctx *sdk.Context, obj *map[string]any) error {
	if ctx.DryRun {
		return nil
	}
	tenant, ok := sdk.Name(*obj)
	if !ok {
		return errors.New("the tenant has no name")
	}
	_, found, err := sdk.Get("", "namespaces", "", tenant)
	if err != nil {
		return fmt.Errorf("reading namespace %s: %v", tenant, err)
	}
	if found {
		sdk.Info(fmt.Sprintf("namespace %s exists: left as it is", tenant))
		return nil
	}
	if _, err := sdk.Apply(TenantNamespace(tenant)); err != nil {
		return fmt.Errorf("creating namespace %s: %v", tenant, err)
	}
	sdk.Info(fmt.Sprintf("created namespace %s", tenant))
	return nil
}

// AfterDelete writes an audit line.
func (Tenants) AfterDelete(ctx *sdk.Context, obj *map[string]any) error {
	tenant, _ := sdk.Name(*obj)
	meta, _ := (*obj)["metadata"].(map[string]any)
	uid, _ := meta["uid"].(string)
	sdk.Info(fmt.Sprintf("audit: tenant %q (uid %q) deleted by %q in request %s",
		tenant, uid, ctx.User.Username, ctx.RequestID))
	return nil
}

func init() {
	sdk.Register(sdk.Strategy[map[string]any]{
		Name: "tenants-go",
		Resources: []sdk.Resource{{
			Group: "example.com", Version: "v1", Kind: "Tenant", Plural: "tenants", Scope: sdk.Cluster,
		}},
		HostFunctions: []sdk.HostFunction{sdk.HostGet, sdk.HostApply},
		Applies:       []sdk.GroupKind{{Group: "", Kind: "Namespace"}},
		Impl:          Tenants{},
	})
}

func main() {}
