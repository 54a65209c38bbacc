// Command machinedeployment-conversion is a version conversion written in Go, the port of the
// Rust example strategies/machinedeployment-conversion: Cluster API's MachineDeployment
// (cluster.x-k8s.io) between v1beta1 and v1beta2, where Cluster API runs a conversion webhook.
// The versions differ in the machine template's object references (v1beta1's carry apiVersion,
// v1beta2's apiGroup) and in where minReadySeconds lives (v1beta1: the spec; v1beta2: the
// machine template).
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o md-conversion-go.wasm ./machinedeployment-conversion
package main

import (
	"errors"
	"fmt"
	"strings"

	"strategyhost.dev/sdk"
)

// Group is Cluster API's group.
const Group = "cluster.x-k8s.io"

// machineDeployments is the conversion.
type machineDeployments struct{}

// Convert converts obj to desired (cluster.x-k8s.io/v1beta1 or /v1beta2).
func (machineDeployments) Convert(_ *sdk.Context, obj map[string]any, desired string) (map[string]any, error) {
	var toV1beta2 bool
	switch desired {
	case Group + "/v1beta2":
		toV1beta2 = true
	case Group + "/v1beta1":
	default:
		return nil, fmt.Errorf("cannot convert to %s", desired)
	}
	source, _ := obj["apiVersion"].(string)
	obj["apiVersion"] = desired
	if source == desired {
		return obj, nil
	}
	spec, ok := obj["spec"].(map[string]any)
	if !ok {
		return obj, nil
	}
	ready, moved := spec["minReadySeconds"]
	if toV1beta2 {
		delete(spec, "minReadySeconds")
	}
	template, err := child(spec, "template", "spec.template is not an object")
	if err != nil {
		return nil, err
	}
	machine, err := child(template, "spec", "spec.template.spec is not an object")
	if err != nil {
		return nil, err
	}
	convertReferences(machine, toV1beta2)
	switch {
	case toV1beta2 && moved:
		machine["minReadySeconds"] = ready
	case !toV1beta2:
		if seconds, ok := machine["minReadySeconds"]; ok {
			delete(machine, "minReadySeconds")
			spec["minReadySeconds"] = seconds
		}
	}
	return obj, nil
}

// child is m[key] as an object, made empty when absent; an error when it is something else.
func child(m map[string]any, key, notObject string) (map[string]any, error) {
	v, ok := m[key]
	if !ok {
		c := map[string]any{}
		m[key] = c
		return c, nil
	}
	c, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New(notObject)
	}
	return c, nil
}

// convertReferences converts the machine template's references in place.
func convertReferences(machine map[string]any, toV1beta2 bool) {
	convert := referenceToV1beta1
	if toV1beta2 {
		convert = referenceToV1beta2
	}
	if r, ok := machine["infrastructureRef"].(map[string]any); ok {
		machine["infrastructureRef"] = convert(r)
	}
	if bootstrap, ok := machine["bootstrap"].(map[string]any); ok {
		if r, ok := bootstrap["configRef"].(map[string]any); ok {
			bootstrap["configRef"] = convert(r)
		}
	}
}

// referenceToV1beta2 turns a v1beta1 reference (apiVersion, kind, name) into v1beta2's
// (apiGroup, kind, name).
func referenceToV1beta2(r map[string]any) map[string]any {
	out := keep(r, "kind", "name")
	apiVersion, _ := r["apiVersion"].(string)
	group, _, _ := strings.Cut(apiVersion, "/")
	out["apiGroup"] = group
	return out
}

// referenceToV1beta1 turns a v1beta2 reference into v1beta1's: the group's v1beta1 (what
// Cluster API's providers serve).
func referenceToV1beta1(r map[string]any) map[string]any {
	out := keep(r, "kind", "name")
	group, _ := r["apiGroup"].(string)
	out["apiVersion"] = group + "/v1beta1"
	return out
}

func keep(m map[string]any, keys ...string) map[string]any {
	out := map[string]any{}
	for _, k := range keys {
		if v, ok := m[k]; ok {
			out[k] = v
		}
	}
	return out
}

func init() {
	sdk.Register(sdk.Strategy[map[string]any]{
		Name: "machinedeployment-conversion-go",
		Resources: []sdk.Resource{{Group: Group, Version: "v1beta2", Kind: "MachineDeployment",
			Plural: "machinedeployments", Scope: sdk.Namespaced}},
		Impl: machineDeployments{},
	})
}

func main() {}
