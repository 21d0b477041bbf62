package deploy_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/relayr-go/relayr/deploy"
)

// The Kubernetes deployment's own figures.
const (
	replicas = 3
	// image is the repository of relayr's image, whose user is uid 65532.
	image     = "ghcr.io/relayr-go/relayr"
	imageUser = 65532
	// portName names the container's HTTP port, which the probes and the
	// Service reach.
	portName = "http"
	// The routes relayr's HTTP API answers without a token
	// (adapters/httpapi): alive, and ready (the ledger answers and its
	// schema fits).
	healthz = "/healthz"
	readyz  = "/readyz"
)

// strict decodes manifests as the API server's strict field validation
// does: a field the type has not, a field spelt in another case, or a field
// given twice is an error.
var strict = func() runtime.Decoder {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{appsv1.AddToScheme, corev1.AddToScheme, policyv1.AddToScheme} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return serializer.NewCodecFactory(s, serializer.EnableStrict).UniversalDeserializer()
}()

// decode splits a YAML file into its documents and decodes each strictly
// into its kind's API type.
func decode(name string, b []byte) ([]runtime.Object, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	var out []runtime.Object
	for n := 1; ; n++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if j, err := yaml.YAMLToJSON(doc); err == nil && string(j) == "null" {
			continue // comments alone
		}
		obj, _, err := strict.Decode(doc, nil, nil)
		if err != nil {
			return nil, fmt.Errorf("%s, document %d: %w", name, n, err)
		}
		out = append(out, obj)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s holds no manifest", name)
	}
	return out, nil
}

// kubernetes are the manifests, one of each kind.
type kubernetes struct {
	deployment *appsv1.Deployment
	service    *corev1.Service
	pdb        *policyv1.PodDisruptionBudget
	configMap  *corev1.ConfigMap
	secret     *corev1.Secret
	account    *corev1.ServiceAccount
	// toml is kubernetes/relayr.toml, the text the ConfigMap holds.
	toml []byte
	// files are the manifests' file names, kustomization.yaml aside.
	files []string
}

// kustomization is the part of kustomization.yaml the deployment uses;
// another field is an error.
type kustomization struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Resources  []string `json:"resources"`
}

// loadKubernetes decodes every manifest under kubernetes/.
func loadKubernetes(fsys fs.FS) (*kubernetes, error) {
	names, err := fs.Glob(fsys, "kubernetes/*.yaml")
	if err != nil {
		return nil, err
	}
	k := &kubernetes{}
	one := func(name string, have bool) error {
		if have {
			return fmt.Errorf("%s: a second manifest of its kind", name)
		}
		return nil
	}
	for _, name := range names {
		if path.Base(name) == "kustomization.yaml" {
			continue
		}
		k.files = append(k.files, path.Base(name))
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		objs, err := decode(name, b)
		if err != nil {
			return nil, err
		}
		for _, obj := range objs {
			switch o := obj.(type) {
			case *appsv1.Deployment:
				err = one(name, k.deployment != nil)
				k.deployment = o
			case *corev1.Service:
				err = one(name, k.service != nil)
				k.service = o
			case *policyv1.PodDisruptionBudget:
				err = one(name, k.pdb != nil)
				k.pdb = o
			case *corev1.ConfigMap:
				err = one(name, k.configMap != nil)
				k.configMap = o
			case *corev1.Secret:
				err = one(name, k.secret != nil)
				k.secret = o
			case *corev1.ServiceAccount:
				err = one(name, k.account != nil)
				k.account = o
			default:
				err = fmt.Errorf("%s: a %T, which the deployment does not use", name, obj)
			}
			if err != nil {
				return nil, err
			}
		}
	}
	switch {
	case k.deployment == nil:
		return nil, errors.New("no Deployment")
	case k.service == nil:
		return nil, errors.New("no Service")
	case k.pdb == nil:
		return nil, errors.New("no PodDisruptionBudget")
	case k.configMap == nil:
		return nil, errors.New("no ConfigMap")
	case k.secret == nil:
		return nil, errors.New("no Secret (secret.example.yaml)")
	case k.account == nil:
		return nil, errors.New("no ServiceAccount")
	case len(k.deployment.Spec.Template.Spec.Containers) != 1:
		return nil, fmt.Errorf("the Deployment's pod has %d containers, not relayr alone", len(k.deployment.Spec.Template.Spec.Containers))
	}
	k.toml, err = fs.ReadFile(fsys, "kubernetes/relayr.toml")
	if err != nil {
		return nil, err
	}
	return k, nil
}

// checkKubernetes answers every way the manifests fail to hold together.
func checkKubernetes(fsys fs.FS) []error {
	k, err := loadKubernetes(fsys)
	if err != nil {
		return []error{err}
	}
	var errs []error
	fail := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }

	if err := checkKustomization(fsys, k.files); err != nil {
		fail("%v", err)
	}

	d := k.deployment
	pod := d.Spec.Template.Spec
	c := pod.Containers[0]
	labels := d.Spec.Template.Labels

	if d.Spec.Replicas == nil || *d.Spec.Replicas != replicas {
		fail("Deployment: replicas is not %d", replicas)
	}
	if d.Spec.Selector == nil || !selects(d.Spec.Selector.MatchLabels, labels) || len(d.Spec.Selector.MatchExpressions) > 0 {
		fail("Deployment: its selector does not select its pods' labels %v", labels)
	}

	// The image runs `relayr serve`; the arguments name the configuration.
	repo, tag, _ := strings.Cut(c.Image, ":")
	if repo != image || tag == "" || tag == "latest" {
		fail("Deployment: image %q is not %s at a pinned release", c.Image, image)
	}
	if len(c.Command) > 0 || !slices.Equal(c.Args, []string{"-config", configPath}) {
		fail("Deployment: the container runs %v %v, not the image's relayr serve with -config %s", c.Command, c.Args, configPath)
	}
	checkConfigMount(pod, c, k, fail)

	conf, err := parseTOML(k.toml)
	if err != nil {
		fail("kubernetes/relayr.toml: %v", err)
		conf = tomlConfig{}
	}
	if got := k.configMap.Data[path.Base(configPath)]; got != string(k.toml) {
		fail("ConfigMap: its relayr.toml differs from kubernetes/relayr.toml")
	}
	if conf.str("ledger.driver") != "postgres" {
		fail("relayr.toml: ledger.driver is %q, not postgres: replicas share a PostgreSQL ledger", conf.str("ledger.driver"))
	}
	if !slices.ContainsFunc(conf.secrets(), func(s tomlSecret) bool { return s.Path == "ledger.dsn" }) {
		fail("relayr.toml: ledger.dsn is not read from env or a file")
	}

	// The port, the probes and the Service.
	port := namedPort(c, portName)
	if port == nil {
		fail("Deployment: the container has no port named %s", portName)
	} else {
		_, p, err := splitListen(conf.str("listen"))
		if err != nil || p != port.ContainerPort {
			fail("relayr.toml: listen %q is not on the container's port %d", conf.str("listen"), port.ContainerPort)
		}
	}
	checkProbe("livenessProbe", c.LivenessProbe, healthz, fail)
	checkProbe("readinessProbe", c.ReadinessProbe, readyz, fail)
	if c.StartupProbe != nil {
		checkProbe("startupProbe", c.StartupProbe, healthz, fail)
	}
	if !selects(k.service.Spec.Selector, labels) || len(k.service.Spec.Selector) == 0 {
		fail("Service: its selector %v does not select the pods' labels %v", k.service.Spec.Selector, labels)
	}
	for _, sp := range k.service.Spec.Ports {
		if !reaches(sp.TargetPort, port) {
			fail("Service: port %s targets %s, not the container's port %s", sp.Name, sp.TargetPort.String(), portName)
		}
	}
	if len(k.service.Spec.Ports) == 0 {
		fail("Service: no port")
	}

	// Disruptions take one replica at a time.
	if s := k.pdb.Spec.Selector; s == nil || len(s.MatchLabels) == 0 || len(s.MatchExpressions) > 0 || !selects(s.MatchLabels, labels) {
		fail("PodDisruptionBudget: its selector does not select the pods' labels %v", labels)
	}
	switch pdb := k.pdb.Spec; {
	case pdb.MaxUnavailable != nil && pdb.MinAvailable == nil && *pdb.MaxUnavailable == intstr.FromInt32(1):
	case pdb.MinAvailable != nil && pdb.MaxUnavailable == nil && *pdb.MinAvailable == intstr.FromInt32(replicas-1):
	default:
		fail("PodDisruptionBudget: it does not allow exactly one replica down (maxUnavailable 1 or minAvailable %d)", replicas-1)
	}

	// Spread: one replica a node.
	spread := false
	for _, tsc := range pod.TopologySpreadConstraints {
		if tsc.LabelSelector == nil || !selects(tsc.LabelSelector.MatchLabels, labels) {
			fail("Deployment: the topology spread over %s does not select the pods", tsc.TopologyKey)
		}
		spread = spread || tsc.TopologyKey == "kubernetes.io/hostname"
	}
	if !spread && (pod.Affinity == nil || pod.Affinity.PodAntiAffinity == nil) {
		fail("Deployment: nothing spreads the replicas over the nodes")
	}

	checkPodSecurity(pod, c, k.account, fail)
	checkResources(c, fail)
	checkGrace(pod, c, conf, fail)
	checkSecrets(pod, c, k.secret, conf, fail)
	return errs
}

func checkKustomization(fsys fs.FS, files []string) error {
	b, err := fs.ReadFile(fsys, "kubernetes/kustomization.yaml")
	if err != nil {
		return err
	}
	var kz kustomization
	if err := yaml.UnmarshalStrict(b, &kz); err != nil {
		return fmt.Errorf("kustomization.yaml: %w", err)
	}
	if kz.APIVersion != "kustomize.config.k8s.io/v1beta1" || kz.Kind != "Kustomization" {
		return fmt.Errorf("kustomization.yaml: %s %s is not a Kustomization", kz.APIVersion, kz.Kind)
	}
	// Every manifest is applied but the example Secret, whose
	// placeholders never ship.
	var want []string
	for _, f := range files {
		if f != "secret.example.yaml" {
			want = append(want, f)
		}
	}
	got := slices.Sorted(slices.Values(kz.Resources))
	if !slices.Equal(got, want) {
		return fmt.Errorf("kustomization.yaml: resources %v, not every manifest but the example Secret %v", got, want)
	}
	return nil
}

// checkConfigMount: the configuration path is the ConfigMap's relayr.toml.
func checkConfigMount(pod corev1.PodSpec, c corev1.Container, k *kubernetes, fail func(string, ...any)) {
	for _, m := range c.VolumeMounts {
		v := volume(pod, m.Name)
		if m.MountPath != path.Dir(configPath) || v == nil || v.ConfigMap == nil {
			continue
		}
		if v.ConfigMap.Name != k.configMap.Name {
			fail("Deployment: %s mounts ConfigMap %s, not %s", m.MountPath, v.ConfigMap.Name, k.configMap.Name)
		}
		if _, ok := k.configMap.Data[path.Base(configPath)]; !ok || len(v.ConfigMap.Items) > 0 {
			fail("Deployment: %s is not the ConfigMap's %s", configPath, path.Base(configPath))
		}
		return
	}
	fail("Deployment: no ConfigMap is mounted at %s", path.Dir(configPath))
}

func checkProbe(what string, p *corev1.Probe, route string, fail func(string, ...any)) {
	switch {
	case p == nil:
		fail("Deployment: no %s", what)
	case p.HTTPGet == nil:
		fail("Deployment: %s is not an HTTP GET", what)
	case p.HTTPGet.Path != route:
		fail("Deployment: %s asks %s, not %s", what, p.HTTPGet.Path, route)
	case p.HTTPGet.Port != intstr.FromString(portName):
		fail("Deployment: %s asks port %s, not the named port %s", what, p.HTTPGet.Port.String(), portName)
	case p.HTTPGet.Scheme != "" && p.HTTPGet.Scheme != corev1.URISchemeHTTP:
		fail("Deployment: %s asks over %s; relayr serves plain HTTP", what, p.HTTPGet.Scheme)
	}
}

// checkPodSecurity: a non-root user, no privilege to gain, a read-only
// root, no capability, the runtime's seccomp profile, no API token.
func checkPodSecurity(pod corev1.PodSpec, c corev1.Container, sa *corev1.ServiceAccount, fail func(string, ...any)) {
	ps := pod.SecurityContext
	if ps == nil {
		ps = &corev1.PodSecurityContext{}
	}
	cs := c.SecurityContext
	if cs == nil {
		cs = &corev1.SecurityContext{}
	}
	nonRoot := cs.RunAsNonRoot
	if nonRoot == nil {
		nonRoot = ps.RunAsNonRoot
	}
	if nonRoot == nil || !*nonRoot {
		fail("Deployment: runAsNonRoot is not true")
	}
	user := cs.RunAsUser
	if user == nil {
		user = ps.RunAsUser
	}
	if user == nil || *user != imageUser {
		fail("Deployment: the container does not run as the image's user %d", imageUser)
	}
	if cs.ReadOnlyRootFilesystem == nil || !*cs.ReadOnlyRootFilesystem {
		fail("Deployment: readOnlyRootFilesystem is not true")
	}
	if cs.AllowPrivilegeEscalation == nil || *cs.AllowPrivilegeEscalation {
		fail("Deployment: allowPrivilegeEscalation is not false")
	}
	if cs.Privileged != nil && *cs.Privileged {
		fail("Deployment: the container is privileged")
	}
	if cs.Capabilities == nil || !slices.Contains(cs.Capabilities.Drop, "ALL") || len(cs.Capabilities.Add) > 0 {
		fail("Deployment: the container does not drop ALL capabilities, adding none")
	}
	seccomp := cs.SeccompProfile
	if seccomp == nil {
		seccomp = ps.SeccompProfile
	}
	if seccomp == nil || seccomp.Type != corev1.SeccompProfileTypeRuntimeDefault {
		fail("Deployment: the seccomp profile is not RuntimeDefault")
	}
	if pod.ServiceAccountName != sa.Name {
		fail("Deployment: the pod runs as ServiceAccount %q, not %q", pod.ServiceAccountName, sa.Name)
	}
	if sa.AutomountServiceAccountToken == nil || *sa.AutomountServiceAccountToken {
		fail("ServiceAccount: automountServiceAccountToken is not false")
	}
	if pod.AutomountServiceAccountToken != nil && *pod.AutomountServiceAccountToken {
		fail("Deployment: the pod mounts a ServiceAccount token")
	}
}

func checkResources(c corev1.Container, fail func(string, ...any)) {
	r := c.Resources
	if r.Requests.Cpu().IsZero() || r.Requests.Memory().IsZero() {
		fail("Deployment: the container requests no CPU or no memory")
	}
	if r.Limits.Memory().IsZero() {
		fail("Deployment: the container's memory has no limit")
	}
}

// checkGrace: the pod's termination grace covers the preStop pause, the
// writes' shutdown_grace and relayr's closing.
func checkGrace(pod corev1.PodSpec, c corev1.Container, conf tomlConfig, fail func(string, ...any)) {
	grace, err := conf.shutdownGrace()
	if err != nil {
		fail("relayr.toml: timings.shutdown_grace: %v", err)
		return
	}
	var pause time.Duration
	if l := c.Lifecycle; l != nil && l.PreStop != nil && l.PreStop.Sleep != nil {
		pause = time.Duration(l.PreStop.Sleep.Seconds) * time.Second
	}
	term := 30 * time.Second // Kubernetes' default
	if pod.TerminationGracePeriodSeconds != nil {
		term = time.Duration(*pod.TerminationGracePeriodSeconds) * time.Second
	}
	if term < pause+grace+stopMargin {
		fail("Deployment: terminationGracePeriodSeconds (%s) is shorter than the preStop pause (%s), shutdown_grace (%s) and %s to close", term, pause, grace, stopMargin)
	}
}

// checkSecrets: every secret relayr.toml names comes from the Secret, as
// the Deployment hands it over (an environment variable from a
// secretKeyRef, or a file of a mounted secret volume); every key the
// Deployment takes is in the example Secret; every key of the Secret is
// used; tokens are long enough, and every value is a placeholder.
func checkSecrets(pod corev1.PodSpec, c corev1.Container, sec *corev1.Secret, conf tomlConfig, fail func(string, ...any)) {
	keys := map[string]string{}
	for k, v := range sec.Data {
		keys[k] = string(v)
	}
	for k, v := range sec.StringData {
		keys[k] = v
	}
	named := func(where, name, key string) bool {
		if name != sec.Name {
			fail("Deployment: %s takes Secret %q, not %q", where, name, sec.Name)
			return false
		}
		if _, ok := keys[key]; !ok {
			fail("Deployment: %s takes key %q, which the example Secret has not", where, key)
			return false
		}
		return true
	}
	// The environment and the files the Deployment fills from the Secret.
	env := map[string]string{}
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			if r := e.ValueFrom.SecretKeyRef; named("env "+e.Name, r.Name, r.Key) {
				env[e.Name] = r.Key
			}
		}
	}
	for _, ef := range c.EnvFrom {
		if ef.SecretRef != nil && ef.SecretRef.Name == sec.Name {
			for k := range keys {
				env[ef.Prefix+k] = k
			}
		}
	}
	files := map[string]string{}
	for _, m := range c.VolumeMounts {
		v := volume(pod, m.Name)
		if v == nil || v.Secret == nil {
			continue
		}
		where := "volume " + v.Name
		switch {
		case len(v.Secret.Items) > 0:
			for _, it := range v.Secret.Items {
				if named(where, v.Secret.SecretName, it.Key) {
					files[path.Join(m.MountPath, it.Path)] = it.Key
				}
			}
		case m.SubPath != "":
			if named(where, v.Secret.SecretName, m.SubPath) {
				files[m.MountPath] = m.SubPath
			}
		case v.Secret.SecretName == sec.Name:
			for k := range keys {
				files[path.Join(m.MountPath, k)] = k
			}
		default:
			named(where, v.Secret.SecretName, "")
		}
	}

	used := map[string]bool{}
	tokens := map[string]string{}
	for _, s := range conf.secrets() {
		var key string
		var ok bool
		switch {
		case s.Env != "" && s.File != "":
			fail("relayr.toml: %s names both env and file", s.Path)
			continue
		case s.Env != "":
			if key, ok = env[s.Env]; !ok {
				fail("relayr.toml: %s reads env %s, which the Deployment does not take from the Secret", s.Path, s.Env)
			}
		case s.File != "":
			if key, ok = files[s.File]; !ok {
				fail("relayr.toml: %s reads %s, which no key of the Secret is mounted at", s.Path, s.File)
			}
		}
		if !ok {
			continue
		}
		used[key] = true
		if !isToken(s.Path) {
			continue
		}
		if n := len(keys[key]); n < minTokenBytes {
			fail("Secret: %s (%s) is %d bytes; relayr refuses a token under %d", key, s.Path, n, minTokenBytes)
		}
		if other, dup := tokens[keys[key]]; dup {
			fail("Secret: %s and %s hold one token; relayr refuses tokens shared", other, key)
		}
		tokens[keys[key]] = key
	}
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		if !used[k] {
			fail("Secret: key %s is read by nothing in relayr.toml", k)
		}
		if !strings.Contains(keys[k], "REPLACE-ME") {
			fail("Secret: key %s is not plainly a placeholder (REPLACE-ME)", k)
		}
	}
}

func volume(pod corev1.PodSpec, name string) *corev1.Volume {
	for i := range pod.Volumes {
		if pod.Volumes[i].Name == name {
			return &pod.Volumes[i]
		}
	}
	return nil
}

func namedPort(c corev1.Container, name string) *corev1.ContainerPort {
	for i := range c.Ports {
		if c.Ports[i].Name == name {
			return &c.Ports[i]
		}
	}
	return nil
}

// reaches reports whether a Service's targetPort is the container's port,
// by its name or its number.
func reaches(target intstr.IntOrString, port *corev1.ContainerPort) bool {
	if port == nil {
		return false
	}
	if target.Type == intstr.String {
		return target.StrVal == port.Name
	}
	return target.IntVal == port.ContainerPort
}

// selects reports whether every label of a selector is among labels.
func selects(selector, labels map[string]string) bool {
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// splitListen splits relayr's listen address; its port is a number.
func splitListen(addr string) (string, int32, error) {
	i := strings.LastIndex(addr, ":")
	if i < 0 {
		return "", 0, fmt.Errorf("%q has no port", addr)
	}
	p, err := strconv.ParseInt(addr[i+1:], 10, 32)
	if err != nil {
		return "", 0, err
	}
	return addr[:i], int32(p), nil
}

// The manifests decode strictly into the Kubernetes API's types and hold
// together: three replicas, probes on relayr's routes, the Service and the
// disruption budget on the pods, the secrets wired from the Secret to
// relayr.toml, a locked-down pod.
func TestTheKubernetesManifestsHoldTogether(t *testing.T) {
	for _, err := range checkKubernetes(deploy.Files) {
		t.Error(err)
	}
}

// A misspelt field, or a manifest that breaks one of the invariants, fails
// the check: each case edits one file of the shipped set.
func TestAFaultInTheKubernetesManifestsIsCaught(t *testing.T) {
	for _, tc := range []struct {
		name, file, old, new, want string
	}{
		{"a misspelt field", "deployment.yaml", "  replicas: 3", "  replica: 3", `unknown field "spec.replica"`},
		{"a field in another case", "service.yaml", "targetPort: http", "targetport: http", `unknown field "spec.ports[0].targetport"`},
		{"a field given twice", "pdb.yaml", "  maxUnavailable: 1", "  maxUnavailable: 1\n  maxUnavailable: 2", `key "maxUnavailable" already set`},
		{"a misspelt field of a probe", "deployment.yaml", "periodSeconds: 10", "periodSecond: 10", `unknown field`},
		{"a kind the deployment does not use", "serviceaccount.yaml", "automountServiceAccountToken: false", "automountServiceAccountToken: false\n---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: x", "*v1.Pod"},
		{"a kind Kubernetes does not know", "service.yaml", "kind: Service", "kind: Servce", `no kind "Servce"`},
		{"two replicas", "deployment.yaml", "  replicas: 3", "  replicas: 2", "replicas is not 3"},
		{"liveness on another route", "deployment.yaml", "path: /healthz", "path: /health", "asks /health, not /healthz"},
		{"readiness on a port number", "deployment.yaml", "path: /readyz\n              port: http", "path: /readyz\n              port: 8080", "not the named port http"},
		{"a Service on another port", "service.yaml", "targetPort: http", "targetPort: 9090", "targets 9090"},
		{"a Service selecting other pods", "service.yaml", "app.kubernetes.io/component: server", "app.kubernetes.io/component: web", "Service: its selector"},
		{"a PDB selecting other pods", "pdb.yaml", "app.kubernetes.io/component: server", "app.kubernetes.io/component: web", "PodDisruptionBudget: its selector"},
		{"a PDB allowing two down", "pdb.yaml", "maxUnavailable: 1", "maxUnavailable: 2", "exactly one replica down"},
		{"a writable root", "deployment.yaml", "readOnlyRootFilesystem: true", "readOnlyRootFilesystem: false", "readOnlyRootFilesystem is not true"},
		{"root", "deployment.yaml", "            runAsNonRoot: true\n            runAsUser: 65532", "            runAsNonRoot: false\n            runAsUser: 0", "runAsNonRoot is not true"},
		{"a capability kept", "deployment.yaml", `drop: ["ALL"]`, `drop: ["NET_RAW"]`, "drop ALL capabilities"},
		{"an API token mounted", "serviceaccount.yaml", "automountServiceAccountToken: false", "automountServiceAccountToken: true", "automountServiceAccountToken is not false"},
		{"the latest image", "deployment.yaml", "relayr:v0.1.0", "relayr:latest", "at a pinned release"},
		{"no -config", "deployment.yaml", `args: ["-config", "/etc/relayr/relayr.toml"]`, `args: []`, "not the image's relayr serve"},
		{"a ConfigMap apart from relayr.toml", "configmap.yaml", `listen = ":8080"`, `listen = ":8081"`, "differs from kubernetes/relayr.toml"},
		{"a listen off the container's port", "relayr.toml", `listen = ":8080"`, `listen = ":9090"`, "not on the container's port 8080"},
		{"SQLite", "relayr.toml", `driver = "postgres"`, `driver = "sqlite"`, "not postgres"},
		{"a secret file no key is mounted at", "relayr.toml", "/run/secrets/relayr/acme-token", "/run/secrets/relayr/acme-api-token", "which no key of the Secret is mounted at"},
		{"an env the Deployment does not set", "relayr.toml", `dsn = {file = "/run/secrets/relayr/database-url"}`, `dsn = {env = "RELAYR_DATABASE_URL"}`, "reads env RELAYR_DATABASE_URL"},
		{"a secretKeyRef to a key the Secret has not", "deployment.yaml", "          volumeMounts:", "          env:\n            - name: X\n              valueFrom:\n                secretKeyRef: {name: relayr, key: nope}\n          volumeMounts:", `takes key "nope"`},
		{"a short token", "secret.example.yaml", "REPLACE-ME-acme-tenant-token-openssl-rand-hex-32", "REPLACE-ME-acme-token", "is 21 bytes"},
		{"a real-looking value", "secret.example.yaml", "REPLACE-ME-acme-plane-api-key", "plane_api_0123456789abcdef", "not plainly a placeholder"},
		{"a key nothing reads", "secret.example.yaml", "stringData:", "stringData:\n  unused: \"REPLACE-ME\"", "key unused is read by nothing"},
		{"a grace too short", "deployment.yaml", "terminationGracePeriodSeconds: 45", "terminationGracePeriodSeconds: 30", "terminationGracePeriodSeconds (30s) is shorter"},
		{"no memory limit", "deployment.yaml", "            limits:\n              memory: 512Mi\n", "", "memory has no limit"},
		{"the example Secret applied", "kustomization.yaml", "  - pdb.yaml", "  - pdb.yaml\n  - secret.example.yaml", "not every manifest but the example Secret"},
		{"a misspelt kustomization", "kustomization.yaml", "resources:", "resource:", `unknown field "resource"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fsys := edited(t, deploy.Files, "kubernetes/"+tc.file, tc.old, tc.new)
			expectFault(t, checkKubernetes(fsys), tc.want)
		})
	}
}
