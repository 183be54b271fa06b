// crdvalidate answers, without an API server, whether kube-apiserver would accept an object
// of a CustomResourceDefinition at creation: the same code the API server runs (the
// structural schema's pruning and defaulting, the OpenAPI schema validation, the list-type
// and embedded-resource checks, and the CEL validator with Kubernetes' libraries and cost
// budget), called in the same order as the custom resource strategy calls it.
//
// It reads JSON lines on stdin and answers one JSON line per request on stdout:
//
//	{"op": "load", "crd": {...a whole CustomResourceDefinition...}}
//	  -> {"name": "...", "versions": ["v1", ...]} or {"error": "..."}
//	{"op": "validate", "crd": "<name>", "version": "v1", "objects": [{...}, ...]}
//	  -> {"results": [{"errors": [{"field", "type", "message", "source", "rule"}]}, ...]}
//
// A create has no old object, so transition rules (oldSelf) are skipped as the API server
// skips them. It ends when stdin closes: a parent that dies ends it too.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"

	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	structurallisttype "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
)

// ruleToken stands in for each CEL rule's message, so that an error names the rule that
// gave it (a messageExpression's text would not); the rule's own message is reported.
const ruleToken = "crdvalidate-rule-"

var tokenPattern = regexp.MustCompile(ruleToken + `(\d+)`)

type rule struct {
	Rule    string
	Message string
	At      string // the schema node the rule is on: "spec.stops[]", "spec.labels[*]"
}

type version struct {
	structural *structuralschema.Structural // pruning, defaulting, list types
	schema     apiservervalidation.SchemaValidator
	cel        *cel.Validator
	rules      []rule
	hasStatus  bool
	scale      *apiextensionsv1.CustomResourceSubresourceScale
}

type request struct {
	Op      string            `json:"op"`
	CRD     json.RawMessage   `json:"crd"`
	Version string            `json:"version"`
	Objects []json.RawMessage `json:"objects"`
	// Judge status too, as a write through the status subresource after the create does
	// (its transition rules still skipped).
	KeepStatus bool `json:"keep_status"`
}

type fieldError struct {
	Field   string `json:"field"`
	Type    string `json:"type"`
	Message string `json:"message"`
	Source  string `json:"source"` // schema, cel, list-type, embedded-resource
	Rule    string `json:"rule,omitempty"`
	RuleAt  string `json:"rule_at,omitempty"` // the schema node the rule is on
}

type result struct {
	Errors []fieldError `json:"errors"`
}

var loaded = map[string]map[string]*version{}

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<30)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		var req request
		var answer interface{}
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			answer = map[string]string{"error": "not a JSON request: " + err.Error()}
		} else {
			answer = handle(req)
		}
		if err := out.Encode(answer); err != nil {
			os.Exit(1)
		}
	}
}

func handle(req request) interface{} {
	switch req.Op {
	case "load":
		name, versions, err := load(req.CRD)
		if err != nil {
			return map[string]string{"error": err.Error()}
		}
		return map[string]interface{}{"name": name, "versions": versions}
	case "validate":
		var name string
		if err := json.Unmarshal(req.CRD, &name); err != nil {
			return map[string]string{"error": "validate needs the loaded CRD's name in \"crd\""}
		}
		v := loaded[name][req.Version]
		if v == nil {
			return map[string]string{"error": fmt.Sprintf("no version %q of a loaded CRD %q", req.Version, name)}
		}
		results := make([]result, len(req.Objects))
		for i, raw := range req.Objects {
			// as the API server decodes: integers as int64, other numbers as float64
			obj := map[string]interface{}{}
			if err := utiljson.Unmarshal(raw, &obj); err != nil {
				return map[string]string{"error": fmt.Sprintf("object %d is not a JSON object: %v", i, err)}
			}
			results[i] = result{Errors: v.validate(obj, req.KeepStatus)}
		}
		return map[string]interface{}{"results": results}
	}
	return map[string]string{"error": fmt.Sprintf("unknown op %q", req.Op)}
}

func load(raw json.RawMessage) (string, []string, error) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := json.Unmarshal(raw, crd); err != nil {
		return "", nil, fmt.Errorf("not a CustomResourceDefinition: %v", err)
	}
	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(crd)
	versions := map[string]*version{}
	names := []string{}
	for _, served := range crd.Spec.Versions {
		v, err := newVersion(crd, served)
		if err != nil {
			return "", nil, fmt.Errorf("version %s: %v", served.Name, err)
		}
		versions[served.Name] = v
		names = append(names, served.Name)
	}
	loaded[crd.Name] = versions
	return crd.Name, names, nil
}

func newVersion(crd *apiextensionsv1.CustomResourceDefinition, served apiextensionsv1.CustomResourceDefinitionVersion) (*version, error) {
	v := &version{hasStatus: served.Subresources != nil && served.Subresources.Status != nil}
	if served.Subresources != nil {
		v.scale = served.Subresources.Scale
	}
	if served.Schema == nil || served.Schema.OpenAPIV3Schema == nil {
		return v, nil
	}
	internal := &apiextensionsinternal.CustomResourceValidation{}
	if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(served.Schema, internal, nil); err != nil {
		return nil, err
	}
	s, err := structuralschema.NewStructural(internal.OpenAPIV3Schema)
	if err != nil {
		return nil, fmt.Errorf("not a structural schema: %v", err)
	}
	s = s.DeepCopy()
	if err := structuraldefaulting.PruneDefaults(s); err != nil {
		return nil, err
	}
	v.structural = s
	if v.schema, _, err = apiservervalidation.NewSchemaValidator(internal.OpenAPIV3Schema); err != nil {
		return nil, err
	}
	tokened := s.DeepCopy()
	v.rules = tokenRules(tokened, "", nil)
	v.cel = cel.NewValidator(tokened, true, celconfig.PerCallLimit)
	return v, nil
}

// tokenRules gives every CEL rule below s a message naming its index in the list returned.
func tokenRules(s *structuralschema.Structural, at string, rules []rule) []rule {
	if s == nil {
		return rules
	}
	for i := range s.XValidations {
		r := &s.XValidations[i]
		rules = append(rules, rule{Rule: r.Rule, Message: r.Message, At: at})
		r.Message = ruleToken + strconv.Itoa(len(rules)-1)
		r.MessageExpression = ""
	}
	rules = tokenRules(s.Items, at+"[]", rules)
	for name := range s.Properties {
		child := s.Properties[name]
		rules = tokenRules(&child, strings.TrimPrefix(at+"."+name, "."), rules)
		s.Properties[name] = child
	}
	if s.AdditionalProperties != nil {
		rules = tokenRules(s.AdditionalProperties.Structural, at+"[*]", rules)
	}
	return rules
}

// validate runs what a create runs, in the custom resource strategy's order.
func (v *version) validate(obj map[string]interface{}, keepStatus bool) []fieldError {
	errs := []fieldError{}
	if v.structural == nil {
		return errs
	}
	if v.hasStatus && !keepStatus {
		delete(obj, "status") // create cannot set status
	}
	structuraldefaulting.Default(obj, v.structural)
	structuralpruning.PruneWithOptions(obj, v.structural, true, structuralschema.UnknownFieldPathOptions{})
	structuraldefaulting.PruneNonNullableNullsWithoutDefaults(obj, v.structural)
	if err, _ := schemaobjectmeta.CoerceWithOptions(nil, obj, v.structural, false, schemaobjectmeta.CoerceOptions{}); err != nil {
		return append(errs, shown(err, "embedded-resource"))
	}
	var found field.ErrorList
	add := func(list field.ErrorList, source string) {
		found = append(found, list...)
		for _, e := range list {
			errs = append(errs, shown(e, source))
		}
	}
	add(apiservervalidation.ValidateCustomResource(nil, obj, v.schema), "schema")
	add(schemaobjectmeta.Validate(context.TODO(), nil, obj, v.structural, false), "embedded-resource")
	add(structurallisttype.ValidateListSetsAndMaps(nil, v.structural, obj), "list-type")
	add(v.scaleErrors(obj, keepStatus), "schema")
	if v.cel == nil {
		return errs
	}
	for _, e := range found { // the strategy runs no rule past an error of these kinds
		switch e.Type {
		case field.ErrorTypeNotSupported, field.ErrorTypeRequired, field.ErrorTypeTooLong,
			field.ErrorTypeTooMany, field.ErrorTypeTypeInvalid:
			return errs
		}
	}
	celErrs, _ := v.cel.Validate(context.TODO(), nil, v.structural, obj, nil, celconfig.RuntimeCELCostBudget)
	for _, e := range celErrs {
		shownErr := shown(e, "cel")
		if found := tokenPattern.FindStringSubmatch(e.Detail); found != nil {
			if n, err := strconv.Atoi(found[1]); err == nil && n < len(v.rules) {
				shownErr.Rule = v.rules[n].Rule
				shownErr.RuleAt = v.rules[n].At
				if e.Detail == found[0] { // the rule did not hold: its own message
					shownErr.Message = v.rules[n].Message
					if shownErr.Message == "" {
						shownErr.Message = "failed rule: " + v.rules[n].Rule
					}
				} else { // it could not be evaluated: the CEL error, naming the rule
					shownErr.Message = strings.ReplaceAll(e.ErrorBody(), found[0], v.rules[n].Rule)
				}
			}
		}
		errs = append(errs, shownErr)
	}
	return errs
}

func shown(e *field.Error, source string) fieldError {
	where := e.Field
	if where == "<nil>" { // a combinator's error names its path in the message instead
		where = ""
	}
	return fieldError{Field: where, Type: string(e.Type), Message: e.ErrorBody(), Source: source}
}

// scaleErrors is what the custom resource validator's ValidateScaleSpec and
// ValidateScaleStatus (apiextensions-apiserver pkg/registry/customresource/validator.go, not
// exported) give for a scale subresource: replicas at its paths a non-negative int32, the
// label selector a string. Status is judged where the write holds it.
func (v *version) scaleErrors(obj map[string]interface{}, keepStatus bool) field.ErrorList {
	var errs field.ErrorList
	if v.scale == nil {
		return errs
	}
	replicas := func(path string) {
		n, _, err := unstructured.NestedInt64(obj, strings.Split(strings.TrimPrefix(path, "."), ".")...)
		switch {
		case err != nil:
			errs = append(errs, field.Invalid(field.NewPath(path), n, err.Error()))
		case n < 0:
			errs = append(errs, field.Invalid(field.NewPath(path), n, "should be a non-negative integer"))
		case n > math.MaxInt32:
			errs = append(errs, field.Invalid(field.NewPath(path), n, fmt.Sprintf("should be less than or equal to %v", math.MaxInt32)))
		}
	}
	replicas(v.scale.SpecReplicasPath)
	if keepStatus || !v.hasStatus { // without a status subresource, a create holds status
		replicas(v.scale.StatusReplicasPath)
		if v.scale.LabelSelectorPath != nil {
			path := *v.scale.LabelSelectorPath
			selector, _, err := unstructured.NestedString(obj, strings.Split(strings.TrimPrefix(path, "."), ".")...)
			if err != nil {
				errs = append(errs, field.Invalid(field.NewPath(path), selector, err.Error()))
			}
		}
	}
	return errs
}
