package abi

// The field numbers of strategy.proto's messages, named <message><field>; numbers_test.go
// checks each against the proto. (The arms of Request's oneof are the Arm constants.)
const (
	manifestABIVersion      = 1
	manifestName            = 2
	manifestResources       = 3
	manifestOperations      = 4
	manifestHostFunctions   = 5
	manifestApplies         = 6
	manifestABIMinorVersion = 7
	manifestAdmissionPolicy = 8
	manifestAuthorizer      = 9

	admissionPolicyMatchResources    = 1
	admissionPolicyMatchConditions   = 2
	admissionPolicyValidationActions = 3
	admissionPolicyFailurePolicy     = 4

	matchConditionName       = 1
	matchConditionExpression = 2

	authorizerFailurePolicy = 1

	groupKindGroup = 1
	groupKindKind  = 2

	resourceGroup   = 1
	resourceVersion = 2
	resourceKind    = 3
	resourcePlural  = 4
	resourceScope   = 5

	contextResource  = 1
	contextDryRun    = 2
	contextRequestID = 3
	contextUser      = 4

	userInfoUsername = 1
	userInfoUID      = 2
	userInfoGroups   = 3
	userInfoExtra    = 4

	extraValueValues = 1

	requestContext = 1

	// Every per-operation request message (PrepareForCreateRequest, ..., BeforeUpdateRequest)
	// numbers its fields alike.
	opRequestObject    = 1
	opRequestOldObject = 2

	convertRequestObjects           = 1
	convertRequestDesiredAPIVersion = 2

	authorizeRequestSpec = 1

	admitRequestPhase       = 1
	admitRequestOperation   = 2
	admitRequestObject      = 3
	admitRequestOldObject   = 4
	admitRequestNamespace   = 5
	admitRequestName        = 6
	admitRequestSubresource = 7

	responseObject           = 1
	responseFieldErrors      = 2
	responseWarnings         = 3
	responseAllowed          = 4
	responseError            = 5
	responseConvertedObjects = 6
	responseObjectPatch      = 7
	responseDenied           = 8
	responseReason           = 9

	fieldErrorKind   = 1
	fieldErrorField  = 2
	fieldErrorDetail = 3

	getRequestGroup     = 1
	getRequestPlural    = 2
	getRequestNamespace = 3
	getRequestName      = 4

	getResponseFound  = 1
	getResponseObject = 2
	getResponseError  = 3

	listRequestGroup         = 1
	listRequestPlural        = 2
	listRequestNamespace     = 3
	listRequestLabelSelector = 4

	listResponseItems = 1
	listResponseError = 2

	applyRequestObject = 1

	applyResponseObject = 1
	applyResponseError  = 2
)
