# Shared by the secure API benchmark scripts (sourced, never run): grant_widgets KUBECONFIG lets
# the group `benchers` do anything with Widgets and CRDs (api-load defines the Widget CRD), as a
# manifest: `kubectl create clusterrole` would look up widgets, which api-load defines later.
grant_widgets() {
    local kubectl="kubectl --kubeconfig $1"
    $kubectl create -f - >/dev/null <<'YAML'
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: widget-bench}
rules:
- {apiGroups: [example.com], resources: [widgets], verbs: ["*"]}
- {apiGroups: [apiextensions.k8s.io], resources: [customresourcedefinitions], verbs: ["*"]}
YAML
    $kubectl create clusterrolebinding widget-bench --clusterrole=widget-bench --group=benchers >/dev/null
    sleep 1
}
