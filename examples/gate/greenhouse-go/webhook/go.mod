// Our own Go conversion webhook for the gate's examples, written as a controller-runtime
// project writes one: Go types per API version, conversion through the hub (v1), a
// ConversionReview handler. apimachinery is pinned to v0.31.2 (the level of
// controller-runtime v0.19, still common): its ObjectMeta returns `creationTimestamp: null`
// for an object that has none (v0.36.4 and v0.37.2 tag that field `omitzero`: no null).
module gate.example.com/greenhouse

go 1.22.0

require k8s.io/apimachinery v0.31.2

require (
	github.com/fxamacker/cbor/v2 v2.7.0 // indirect
	github.com/go-logr/logr v1.4.2 // indirect
	github.com/gogo/protobuf v1.3.2 // indirect
	github.com/google/gofuzz v1.2.0 // indirect
	github.com/json-iterator/go v1.1.12 // indirect
	github.com/modern-go/concurrent v0.0.0-20180306012644-bacd9c7ef1dd // indirect
	github.com/modern-go/reflect2 v1.0.2 // indirect
	github.com/x448/float16 v0.8.4 // indirect
	golang.org/x/net v0.26.0 // indirect
	golang.org/x/text v0.16.0 // indirect
	gopkg.in/inf.v0 v0.9.1 // indirect
	gopkg.in/yaml.v2 v2.4.0 // indirect
	k8s.io/klog/v2 v2.130.1 // indirect
	k8s.io/utils v0.0.0-20240711033017-18e509b52bc8 // indirect
	sigs.k8s.io/json v0.0.0-20221116044647-bc3834ca7abd // indirect
	sigs.k8s.io/structured-merge-diff/v4 v4.4.1 // indirect
)
