package abi

import "strconv"

// Scope is where objects of a resource live (enum Scope).
type Scope int32

// The values of enum Scope.
const (
	ScopeUnspecified Scope = 0
	ScopeNamespaced  Scope = 1
	ScopeCluster     Scope = 2
)

// Operation is a strategy operation or hook (enum Operation).
type Operation int32

// The values of enum Operation.
const (
	OperationUnspecified              Operation = 0
	OperationPrepareForCreate         Operation = 1
	OperationValidate                 Operation = 2
	OperationWarningsOnCreate         Operation = 3
	OperationCanonicalize             Operation = 4
	OperationPrepareForUpdate         Operation = 5
	OperationValidateUpdate           Operation = 6
	OperationWarningsOnUpdate         Operation = 7
	OperationAllowCreateOnUpdate      Operation = 8
	OperationAllowUnconditionalUpdate Operation = 9
	OperationBeforeDelete             Operation = 10
	OperationAfterCreate              Operation = 11
	OperationAfterUpdate              Operation = 12
	OperationAfterDelete              Operation = 13
	OperationAdmitMutate              Operation = 14
	OperationAdmitValidate            Operation = 15
	OperationConvert                  Operation = 16
	OperationAuthorize                Operation = 17
)

// HostFunction is a function the host exports to guests (enum HostFunction).
type HostFunction int32

// The values of enum HostFunction.
const (
	HostFunctionUnspecified HostFunction = 0
	HostFunctionLog         HostFunction = 1
	HostFunctionGet         HostFunction = 2
	HostFunctionList        HostFunction = 3
	HostFunctionApply       HostFunction = 4
)

// FieldErrorKind is Kubernetes' kind of a field error (enum FieldErrorKind).
type FieldErrorKind int32

// The values of enum FieldErrorKind.
const (
	FieldErrorKindUnspecified  FieldErrorKind = 0
	FieldErrorKindRequired     FieldErrorKind = 1
	FieldErrorKindInvalid      FieldErrorKind = 2
	FieldErrorKindForbidden    FieldErrorKind = 3
	FieldErrorKindDuplicate    FieldErrorKind = 4
	FieldErrorKindNotSupported FieldErrorKind = 5
	FieldErrorKindTooLong      FieldErrorKind = 6
	FieldErrorKindTooMany      FieldErrorKind = 7
)

// AdmissionPhase is where in the admission chain a policy is asked (enum AdmissionPhase).
type AdmissionPhase int32

// The values of enum AdmissionPhase.
const (
	AdmissionPhaseUnspecified AdmissionPhase = 0
	AdmissionPhaseMutate      AdmissionPhase = 1
	AdmissionPhaseValidate    AdmissionPhase = 2
)

// Arm is which operation a Request carries: the field number of its arm of the `operation`
// oneof.
type Arm int32

// The arms of Request's `operation` oneof (0: none).
const (
	ArmNone                     Arm = 0
	ArmPrepareForCreate         Arm = 10
	ArmValidate                 Arm = 11
	ArmWarningsOnCreate         Arm = 12
	ArmCanonicalize             Arm = 13
	ArmPrepareForUpdate         Arm = 14
	ArmValidateUpdate           Arm = 15
	ArmWarningsOnUpdate         Arm = 16
	ArmAllowCreateOnUpdate      Arm = 17
	ArmAllowUnconditionalUpdate Arm = 18
	ArmBeforeDelete             Arm = 19
	ArmAfterCreate              Arm = 20
	ArmAfterUpdate              Arm = 21
	ArmAfterDelete              Arm = 22
	ArmBeforeCreate             Arm = 30
	ArmBeforeUpdate             Arm = 31
	ArmAdmit                    Arm = 32
	ArmConvert                  Arm = 33
	ArmAuthorize                Arm = 34
)

var operationNames = [...]string{
	"Unspecified", "PrepareForCreate", "Validate", "WarningsOnCreate", "Canonicalize",
	"PrepareForUpdate", "ValidateUpdate", "WarningsOnUpdate", "AllowCreateOnUpdate",
	"AllowUnconditionalUpdate", "BeforeDelete", "AfterCreate", "AfterUpdate", "AfterDelete",
	"AdmitMutate", "AdmitValidate", "Convert", "Authorize",
}

func (o Operation) String() string { return name(operationNames[:], int32(o)) }

var hostFunctionNames = [...]string{"Unspecified", "Log", "Get", "List", "Apply"}

func (h HostFunction) String() string { return name(hostFunctionNames[:], int32(h)) }

var fieldErrorKindNames = [...]string{
	"Unspecified", "Required", "Invalid", "Forbidden", "Duplicate", "NotSupported", "TooLong",
	"TooMany",
}

func (k FieldErrorKind) String() string { return name(fieldErrorKindNames[:], int32(k)) }

var scopeNames = [...]string{"Unspecified", "Namespaced", "Cluster"}

func (s Scope) String() string { return name(scopeNames[:], int32(s)) }

var armNames = map[Arm]string{
	ArmNone: "None", ArmPrepareForCreate: "PrepareForCreate", ArmValidate: "Validate",
	ArmWarningsOnCreate: "WarningsOnCreate", ArmCanonicalize: "Canonicalize",
	ArmPrepareForUpdate: "PrepareForUpdate", ArmValidateUpdate: "ValidateUpdate",
	ArmWarningsOnUpdate: "WarningsOnUpdate", ArmAllowCreateOnUpdate: "AllowCreateOnUpdate",
	ArmAllowUnconditionalUpdate: "AllowUnconditionalUpdate", ArmBeforeDelete: "BeforeDelete",
	ArmAfterCreate: "AfterCreate", ArmAfterUpdate: "AfterUpdate", ArmAfterDelete: "AfterDelete",
	ArmBeforeCreate: "BeforeCreate", ArmBeforeUpdate: "BeforeUpdate", ArmAdmit: "Admit",
	ArmConvert: "Convert", ArmAuthorize: "Authorize",
}

func (a Arm) String() string {
	if n, ok := armNames[a]; ok {
		return n
	}
	return strconv.Itoa(int(a))
}

func name(names []string, v int32) string {
	if v >= 0 && int(v) < len(names) {
		return names[v]
	}
	return strconv.Itoa(int(v))
}
