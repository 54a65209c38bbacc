package abi

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// number is one field number or enum value this package uses: the Go constant, its value, and
// what it stands for in strategy.proto (a message and field, or an enum and value).
type number struct {
	goName string
	value  int
	scope  string // message or enum name
	name   string // field or value name
}

// perOperationMessages are the request messages that number object and old_object alike.
var perOperationMessages = map[string]bool{ // message -> has old_object
	"PrepareForCreateRequest": false, "ValidateRequest": false, "WarningsOnCreateRequest": false,
	"CanonicalizeRequest": false, "PrepareForUpdateRequest": true, "ValidateUpdateRequest": true,
	"WarningsOnUpdateRequest": true, "BeforeDeleteRequest": false, "AfterCreateRequest": false,
	"AfterUpdateRequest": true, "AfterDeleteRequest": false, "BeforeCreateRequest": false,
	"BeforeUpdateRequest": true,
}

// emptyMessages are request messages without fields.
var emptyMessages = []string{"AllowCreateOnUpdateRequest", "AllowUnconditionalUpdateRequest"}

// notModelled are proto fields this package deliberately does not read or write.
var notModelled = map[string]bool{}

func numbers() []number {
	n := []number{
		{"manifestABIVersion", manifestABIVersion, "Manifest", "abi_version"},
		{"manifestName", manifestName, "Manifest", "name"},
		{"manifestResources", manifestResources, "Manifest", "resources"},
		{"manifestOperations", manifestOperations, "Manifest", "operations"},
		{"manifestHostFunctions", manifestHostFunctions, "Manifest", "host_functions"},
		{"manifestApplies", manifestApplies, "Manifest", "applies"},
		{"manifestABIMinorVersion", manifestABIMinorVersion, "Manifest", "abi_minor_version"},
		{"manifestAdmissionPolicy", manifestAdmissionPolicy, "Manifest", "admission_policy"},
		{"manifestAuthorizer", manifestAuthorizer, "Manifest", "authorizer"},
		{"admissionPolicyMatchResources", admissionPolicyMatchResources, "AdmissionPolicy", "match_resources"},
		{"admissionPolicyMatchConditions", admissionPolicyMatchConditions, "AdmissionPolicy", "match_conditions"},
		{"admissionPolicyValidationActions", admissionPolicyValidationActions, "AdmissionPolicy", "validation_actions"},
		{"admissionPolicyFailurePolicy", admissionPolicyFailurePolicy, "AdmissionPolicy", "failure_policy"},
		{"matchConditionName", matchConditionName, "MatchCondition", "name"},
		{"matchConditionExpression", matchConditionExpression, "MatchCondition", "expression"},
		{"authorizerFailurePolicy", authorizerFailurePolicy, "Authorizer", "failure_policy"},
		{"groupKindGroup", groupKindGroup, "GroupKind", "group"},
		{"groupKindKind", groupKindKind, "GroupKind", "kind"},
		{"resourceGroup", resourceGroup, "Resource", "group"},
		{"resourceVersion", resourceVersion, "Resource", "version"},
		{"resourceKind", resourceKind, "Resource", "kind"},
		{"resourcePlural", resourcePlural, "Resource", "plural"},
		{"resourceScope", resourceScope, "Resource", "scope"},
		{"contextResource", contextResource, "Context", "resource"},
		{"contextDryRun", contextDryRun, "Context", "dry_run"},
		{"contextRequestID", contextRequestID, "Context", "request_id"},
		{"contextUser", contextUser, "Context", "user"},
		{"userInfoUsername", userInfoUsername, "UserInfo", "username"},
		{"userInfoUID", userInfoUID, "UserInfo", "uid"},
		{"userInfoGroups", userInfoGroups, "UserInfo", "groups"},
		{"userInfoExtra", userInfoExtra, "UserInfo", "extra"},
		{"extraValueValues", extraValueValues, "ExtraValue", "values"},
		{"requestContext", requestContext, "Request", "context"},
		{"convertRequestObjects", convertRequestObjects, "ConvertRequest", "objects"},
		{"convertRequestDesiredAPIVersion", convertRequestDesiredAPIVersion, "ConvertRequest", "desired_api_version"},
		{"admitRequestPhase", admitRequestPhase, "AdmitRequest", "phase"},
		{"admitRequestOperation", admitRequestOperation, "AdmitRequest", "operation"},
		{"admitRequestObject", admitRequestObject, "AdmitRequest", "object"},
		{"admitRequestOldObject", admitRequestOldObject, "AdmitRequest", "old_object"},
		{"admitRequestNamespace", admitRequestNamespace, "AdmitRequest", "namespace"},
		{"admitRequestName", admitRequestName, "AdmitRequest", "name"},
		{"admitRequestSubresource", admitRequestSubresource, "AdmitRequest", "subresource"},
		{"responseObject", responseObject, "Response", "object"},
		{"responseFieldErrors", responseFieldErrors, "Response", "field_errors"},
		{"responseWarnings", responseWarnings, "Response", "warnings"},
		{"responseAllowed", responseAllowed, "Response", "allowed"},
		{"responseError", responseError, "Response", "error"},
		{"responseConvertedObjects", responseConvertedObjects, "Response", "converted_objects"},
		{"responseObjectPatch", responseObjectPatch, "Response", "object_patch"},
		{"responseDenied", responseDenied, "Response", "denied"},
		{"responseReason", responseReason, "Response", "reason"},
		{"fieldErrorKind", fieldErrorKind, "FieldError", "kind"},
		{"fieldErrorField", fieldErrorField, "FieldError", "field"},
		{"fieldErrorDetail", fieldErrorDetail, "FieldError", "detail"},
		{"getRequestGroup", getRequestGroup, "GetRequest", "group"},
		{"getRequestPlural", getRequestPlural, "GetRequest", "plural"},
		{"getRequestNamespace", getRequestNamespace, "GetRequest", "namespace"},
		{"getRequestName", getRequestName, "GetRequest", "name"},
		{"getResponseFound", getResponseFound, "GetResponse", "found"},
		{"getResponseObject", getResponseObject, "GetResponse", "object"},
		{"getResponseError", getResponseError, "GetResponse", "error"},
		{"listRequestGroup", listRequestGroup, "ListRequest", "group"},
		{"listRequestPlural", listRequestPlural, "ListRequest", "plural"},
		{"listRequestNamespace", listRequestNamespace, "ListRequest", "namespace"},
		{"listRequestLabelSelector", listRequestLabelSelector, "ListRequest", "label_selector"},
		{"listResponseItems", listResponseItems, "ListResponse", "items"},
		{"listResponseError", listResponseError, "ListResponse", "error"},
		{"applyRequestObject", applyRequestObject, "ApplyRequest", "object"},
		{"applyResponseObject", applyResponseObject, "ApplyResponse", "object"},
		{"applyResponseError", applyResponseError, "ApplyResponse", "error"},

		{"ArmPrepareForCreate", int(ArmPrepareForCreate), "Request", "prepare_for_create"},
		{"ArmValidate", int(ArmValidate), "Request", "validate"},
		{"ArmWarningsOnCreate", int(ArmWarningsOnCreate), "Request", "warnings_on_create"},
		{"ArmCanonicalize", int(ArmCanonicalize), "Request", "canonicalize"},
		{"ArmPrepareForUpdate", int(ArmPrepareForUpdate), "Request", "prepare_for_update"},
		{"ArmValidateUpdate", int(ArmValidateUpdate), "Request", "validate_update"},
		{"ArmWarningsOnUpdate", int(ArmWarningsOnUpdate), "Request", "warnings_on_update"},
		{"ArmAllowCreateOnUpdate", int(ArmAllowCreateOnUpdate), "Request", "allow_create_on_update"},
		{"ArmAllowUnconditionalUpdate", int(ArmAllowUnconditionalUpdate), "Request", "allow_unconditional_update"},
		{"ArmBeforeDelete", int(ArmBeforeDelete), "Request", "before_delete"},
		{"ArmAfterCreate", int(ArmAfterCreate), "Request", "after_create"},
		{"ArmAfterUpdate", int(ArmAfterUpdate), "Request", "after_update"},
		{"ArmAfterDelete", int(ArmAfterDelete), "Request", "after_delete"},
		{"ArmBeforeCreate", int(ArmBeforeCreate), "Request", "before_create"},
		{"ArmBeforeUpdate", int(ArmBeforeUpdate), "Request", "before_update"},
		{"ArmAdmit", int(ArmAdmit), "Request", "admit"},
		{"ArmConvert", int(ArmConvert), "Request", "convert"},
		{"ArmAuthorize", int(ArmAuthorize), "Request", "authorize"},
		{"authorizeRequestSpec", authorizeRequestSpec, "AuthorizeRequest", "spec"},
	}
	for msg, hasOld := range perOperationMessages {
		n = append(n, number{"opRequestObject", opRequestObject, msg, "object"})
		if hasOld {
			n = append(n, number{"opRequestOldObject", opRequestOldObject, msg, "old_object"})
		}
	}
	enum := func(goName string, value int32, enum, name string) {
		n = append(n, number{goName, int(value), enum, name})
	}
	enum("ScopeUnspecified", int32(ScopeUnspecified), "Scope", "SCOPE_UNSPECIFIED")
	enum("ScopeNamespaced", int32(ScopeNamespaced), "Scope", "SCOPE_NAMESPACED")
	enum("ScopeCluster", int32(ScopeCluster), "Scope", "SCOPE_CLUSTER")
	for i, name := range operationNames {
		goName := "Operation" + name
		enum(goName, int32(i), "Operation", "OPERATION_"+screaming(name))
	}
	for i, name := range hostFunctionNames {
		enum("HostFunction"+name, int32(i), "HostFunction", "HOST_FUNCTION_"+screaming(name))
	}
	for i, name := range fieldErrorKindNames {
		enum("FieldErrorKind"+name, int32(i), "FieldErrorKind", "FIELD_ERROR_KIND_"+screaming(name))
	}
	enum("AdmissionPhaseUnspecified", int32(AdmissionPhaseUnspecified), "AdmissionPhase", "ADMISSION_PHASE_UNSPECIFIED")
	enum("AdmissionPhaseMutate", int32(AdmissionPhaseMutate), "AdmissionPhase", "ADMISSION_PHASE_MUTATE")
	enum("AdmissionPhaseValidate", int32(AdmissionPhaseValidate), "AdmissionPhase", "ADMISSION_PHASE_VALIDATE")
	return n
}

// screaming turns "PrepareForCreate" into "PREPARE_FOR_CREATE".
func screaming(s string) string {
	var b strings.Builder
	for i, r := range s {
		if i > 0 && unicode.IsUpper(r) {
			b.WriteByte('_')
		}
		b.WriteRune(unicode.ToUpper(r))
	}
	return b.String()
}

func TestNumbersMatchTheProto(t *testing.T) {
	proto := readProto(t)
	for _, n := range numbers() {
		defs, ok := proto[n.scope]
		if !ok {
			t.Errorf("%s: strategy.proto has no message or enum %s", n.goName, n.scope)
			continue
		}
		want, ok := defs[n.name]
		if !ok {
			t.Errorf("%s: %s has no %s in strategy.proto", n.goName, n.scope, n.name)
		} else if want != n.value {
			t.Errorf("%s = %d, but %s.%s is %d in strategy.proto", n.goName, n.value, n.scope, n.name, want)
		}
	}
}

// Every field of the messages (and every value of the enums) this package models is known to
// it: a field added to the proto fails here until the Go side handles it.
func TestEveryProtoFieldIsModelled(t *testing.T) {
	proto := readProto(t)
	known := map[string]bool{}
	scopes := map[string]bool{}
	for _, n := range numbers() {
		known[n.scope+"."+n.name] = true
		scopes[n.scope] = true
	}
	for _, m := range emptyMessages {
		scopes[m] = true
	}
	for scope := range scopes {
		for name := range proto[scope] {
			if key := scope + "." + name; !known[key] && !notModelled[key] {
				t.Errorf("strategy.proto's %s is not handled by the Go SDK", key)
			}
		}
	}
	// And every request message is one the Go side numbers.
	for _, n := range numbers() {
		if n.scope == "Request" && strings.HasPrefix(n.goName, "Arm") {
			if _, ok := proto[messageOfArm(n.name)]; !ok && n.name != "admit" && n.name != "convert" {
				t.Errorf("no message %s for arm %s", messageOfArm(n.name), n.name)
			}
		}
	}
	for _, m := range emptyMessages {
		if fields, ok := proto[m]; !ok || len(fields) != 0 {
			t.Errorf("%s: want an empty message in strategy.proto, have %v (present: %v)", m, fields, ok)
		}
	}
}

func messageOfArm(arm string) string {
	var b strings.Builder
	for _, part := range strings.Split(arm, "_") {
		b.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	return b.String() + "Request"
}

// Every constant of numbers.go and enums.go is in the table above, so none escapes the check.
func TestEveryConstantIsChecked(t *testing.T) {
	checked := map[string]bool{}
	for _, n := range numbers() {
		checked[n.goName] = true
	}
	fset := token.NewFileSet()
	for _, file := range []string{"numbers.go", "enums.go"} {
		f, err := parser.ParseFile(fset, file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			gen, ok := decl.(*ast.GenDecl)
			if !ok || gen.Tok != token.CONST {
				continue
			}
			for _, spec := range gen.Specs {
				for _, name := range spec.(*ast.ValueSpec).Names {
					if name.Name != "ArmNone" && !checked[name.Name] {
						t.Errorf("%s: constant %s is not checked against strategy.proto", file, name.Name)
					}
				}
			}
		}
	}
}

func readProto(t *testing.T) map[string]map[string]int {
	t.Helper()
	src, err := os.ReadFile("../../proto/strategy.proto")
	if err != nil {
		t.Fatal(err)
	}
	defs, err := parseProto(string(src))
	if err != nil {
		t.Fatalf("strategy.proto: %v", err)
	}
	return defs
}

// parseProto reads the messages and enums of a proto3 file: for each, its fields (oneof arms
// included) or values by name, with their numbers. Nested definitions are named Outer.Inner.
func parseProto(src string) (map[string]map[string]int, error) {
	p := &protoParser{toks: tokenize(src), defs: map[string]map[string]int{}}
	if err := p.body("", ""); err != nil {
		return nil, err
	}
	return p.defs, nil
}

type protoParser struct {
	toks []string
	pos  int
	defs map[string]map[string]int
}

func (p *protoParser) next() string {
	if p.pos >= len(p.toks) {
		return ""
	}
	p.pos++
	return p.toks[p.pos-1]
}

// body reads definitions until the closing brace (or the end of the file, at the top level).
// scope is the message or enum the fields go to; prefix names nested definitions.
func (p *protoParser) body(scope, prefix string) error {
	for {
		tok := p.next()
		switch tok {
		case "":
			if scope != "" {
				return fmt.Errorf("%s: unexpected end of file", scope)
			}
			return nil
		case "}":
			return nil
		case ";":
		case "message", "enum":
			name := prefix + p.next()
			if p.next() != "{" {
				return fmt.Errorf("%s %s: expected {", tok, name)
			}
			p.defs[name] = map[string]int{}
			if err := p.body(name, name+"."); err != nil {
				return err
			}
		case "oneof":
			p.next() // its name: the arms are fields of the message
			if p.next() != "{" {
				return fmt.Errorf("%s: oneof without {", scope)
			}
			if err := p.body(scope, prefix); err != nil {
				return err
			}
		default:
			// A statement up to ';': a field (`[repeated] type name = N [opts];`, `map<K, V>
			// name = N;`), an enum value (`NAME = N;`), or syntax/package/option/reserved.
			stmt := []string{tok}
			for t := p.next(); t != ";"; t = p.next() {
				if t == "" {
					return fmt.Errorf("%s: unterminated statement %v", scope, stmt)
				}
				stmt = append(stmt, t)
			}
			if scope == "" || stmt[0] == "option" || stmt[0] == "reserved" {
				continue
			}
			eq := indexOf(stmt, "=")
			if eq < 1 || eq+1 >= len(stmt) {
				return fmt.Errorf("%s: cannot read %v", scope, stmt)
			}
			n, err := strconv.Atoi(stmt[eq+1])
			if err != nil {
				return fmt.Errorf("%s: %s: %v", scope, stmt[eq-1], err)
			}
			p.defs[scope][stmt[eq-1]] = n
		}
	}
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

// tokenize splits proto source into identifiers, numbers, string literals and punctuation,
// dropping comments.
func tokenize(src string) []string {
	var toks []string
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case strings.HasPrefix(src[i:], "//"):
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case strings.HasPrefix(src[i:], "/*"):
			end := strings.Index(src[i+2:], "*/")
			if end < 0 {
				return toks
			}
			i += end + 4
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '"' || c == '\'':
			j := i + 1
			for j < len(src) && src[j] != c {
				j++
			}
			toks = append(toks, src[i:min(j+1, len(src))])
			i = j + 1
		case isWord(c):
			j := i
			for j < len(src) && isWord(src[j]) {
				j++
			}
			toks = append(toks, src[i:j])
			i = j
		default:
			toks = append(toks, string(c))
			i++
		}
	}
	return toks
}

func isWord(c byte) bool {
	return c == '_' || c == '.' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func TestTheProtoParserReadsNestedAndMapFields(t *testing.T) {
	defs, err := parseProto(`syntax = "proto3"; /* c */ package x.v1;
message A { map<string, B> m = 4; // c
  oneof op { B b = 10; } message B { repeated string s = 1 [packed = false]; } reserved 2, 3; }
enum E { E_UNSPECIFIED = 0; E_ONE = 1; }`)
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(sorted(defs["A"]), sorted(defs["A.B"]), sorted(defs["E"]))
	if want := "[b=10 m=4] [s=1] [E_ONE=1 E_UNSPECIFIED=0]"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

func sorted(m map[string]int) []string {
	var s []string
	for k, v := range m {
		s = append(s, fmt.Sprintf("%s=%d", k, v))
	}
	sort.Strings(s)
	return s
}
