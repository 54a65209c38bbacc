// Drives a server with the official JavaScript client (@kubernetes/client-node 1.4, installed by
// scripts/setup.sh into .tools/js): a ConfigMap created, then server-side applied with
// PatchStrategy.ServerSideApply, a Lease created, a list; prints what it saw as one JSON line.
//
//   K8S_CLIENT_NODE=.../dist/index.js node tests/js/client.mjs http://127.0.0.1:8080
const k8s = await import(process.env.K8S_CLIENT_NODE);
const kc = new k8s.KubeConfig();
kc.loadFromOptions({
  // Plain HTTP (the server's development mode) is allowed by the client only with skipTLSVerify.
  clusters: [{ name: 'c', server: process.argv[2], skipTLSVerify: true }],
  users: [{ name: 'u' }],
  contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
  currentContext: 'x',
});
const core = kc.makeApiClient(k8s.CoreV1Api);
const coordination = kc.makeApiClient(k8s.CoordinationV1Api);
const out = {};
const created = await core.createNamespacedConfigMap({
  namespace: 'default',
  body: { metadata: { name: 'js' }, data: { a: '1' } },
});
out.created = created.metadata.name;
const applied = await core.patchNamespacedConfigMap(
  {
    name: 'js',
    namespace: 'default',
    body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'js' }, data: { a: '1', b: '2' } },
    fieldManager: 'js-client',
    force: true,
  },
  k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.ServerSideApply),
);
out.applied = applied.data;
out.managers = applied.metadata.managedFields.map((m) => `${m.manager}:${m.operation}`);
try {
  await core.patchNamespacedConfigMap(
    { name: 'js', namespace: 'default', body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'js' }, data: { a: 'other' } }, fieldManager: 'rival' },
    k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.ServerSideApply),
  );
  out.conflict = 'none';
} catch (e) {
  out.conflict = e.code;
}
const lease = await coordination.createNamespacedLease({
  namespace: 'default',
  body: { metadata: { name: 'js-lease' }, spec: { holderIdentity: 'js', leaseDurationSeconds: 10, renewTime: new k8s.V1MicroTime() } },
});
out.lease = lease.spec.holderIdentity;
const list = await core.listNamespacedConfigMap({ namespace: 'default' });
out.listed = list.items.map((i) => i.metadata.name);
console.log(JSON.stringify(out));
