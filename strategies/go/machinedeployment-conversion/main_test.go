package main

import (
	"encoding/json"
	"testing"

	"strategyhost.dev/sdk/sdktest"
)

func v1beta1() map[string]any {
	var obj map[string]any
	_ = json.Unmarshal([]byte(`{"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "MachineDeployment",
		"metadata": {"name": "md"},
		"spec": {"clusterName": "c1", "minReadySeconds": 5, "template": {"spec": {
			"clusterName": "c1",
			"bootstrap": {"configRef": {"apiVersion": "bootstrap.cluster.x-k8s.io/v1beta1", "kind": "KubeadmConfigTemplate", "name": "b"}},
			"infrastructureRef": {"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1", "kind": "DockerMachineTemplate", "name": "i"}}}}}`), &obj)
	return obj
}

func TestConvertsToV1beta2AndRoundTrips(t *testing.T) {
	out, err := sdktest.Convert("cluster.x-k8s.io/v1beta2", v1beta1())
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(out[0])
	want := `{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"MachineDeployment","metadata":{"name":"md"},` +
		`"spec":{"clusterName":"c1","template":{"spec":{"bootstrap":{"configRef":{"apiGroup":"bootstrap.cluster.x-k8s.io","kind":"KubeadmConfigTemplate","name":"b"}},` +
		`"clusterName":"c1","infrastructureRef":{"apiGroup":"infrastructure.cluster.x-k8s.io","kind":"DockerMachineTemplate","name":"i"},"minReadySeconds":5}}}}`
	if string(got) != want {
		t.Errorf("converted\n got %s\nwant %s", got, want)
	}
	if err := sdktest.RoundTrip(v1beta1(), "cluster.x-k8s.io/v1beta2"); err != nil {
		t.Error(err)
	}
	if err := sdktest.RoundTrip(out[0], "cluster.x-k8s.io/v1beta1"); err != nil {
		t.Error(err)
	}
}

func TestRefusesOtherVersionsAndMalformedTemplates(t *testing.T) {
	if _, err := sdktest.Convert("cluster.x-k8s.io/v2", v1beta1()); err == nil || err.Error() != "cannot convert to cluster.x-k8s.io/v2" {
		t.Errorf("v2: %v", err)
	}
	obj := v1beta1()
	obj["spec"].(map[string]any)["template"] = "x"
	if _, err := sdktest.Convert("cluster.x-k8s.io/v1beta2", obj); err == nil || err.Error() != "spec.template is not an object" {
		t.Errorf("template: %v", err)
	}
}
