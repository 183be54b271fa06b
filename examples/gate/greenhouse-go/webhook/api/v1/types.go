// Package v1 holds the Greenhouse types at v1, the hub (storage) version: what every other
// version converts to and from.
package v1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// APIVersion is the apiVersion of objects at this version.
const APIVersion = "greenhouse.gate.example.com/v1"

// Greenhouse is the Schema for the greenhouses API.
type Greenhouse struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   GreenhouseSpec   `json:"spec,omitempty"`
	Status GreenhouseStatus `json:"status,omitempty"`
}

// GreenhouseSpec is the desired state; v1 groups the climate settings v1alpha1 kept flat.
type GreenhouseSpec struct {
	Location string   `json:"location,omitempty"`
	Climate  *Climate `json:"climate,omitempty"`
	Zones    []Zone   `json:"zones,omitempty"`
}

// Climate is what v1alpha1 spelt spec.targetTemperature and spec.autoVent.
type Climate struct {
	TargetCelsius int32 `json:"targetCelsius,omitempty"`
	AutoVent      bool  `json:"autoVent,omitempty"`
}

// Zone is one part of the greenhouse.
type Zone struct {
	Name string `json:"name,omitempty"`
	Beds []Bed  `json:"beds,omitempty"`
}

// Bed is one bed of a zone.
type Bed struct {
	Crop       string      `json:"crop,omitempty"`
	Irrigation *Irrigation `json:"irrigation,omitempty"`
}

// Irrigation says how a bed is watered.
type Irrigation struct {
	Minutes int32 `json:"minutes,omitempty"`
	Drip    *Drip `json:"drip,omitempty"`
}

// Drip is drip irrigation.
type Drip struct {
	Lines   int32    `json:"lines,omitempty"`
	Emitter *Emitter `json:"emitter,omitempty"`
}

// Emitter is a drip line's emitter: spec.zones[].beds[].irrigation.drip.emitter.* is 7
// levels down.
type Emitter struct {
	LitersPerHour        int32 `json:"litersPerHour,omitempty"`
	PressureCompensating bool  `json:"pressureCompensating,omitempty"`
}

// GreenhouseStatus is the observed state.
type GreenhouseStatus struct {
	Phase     string `json:"phase,omitempty"`
	OpenVents int32  `json:"openVents,omitempty"`
	Heating   bool   `json:"heating,omitempty"`
}
