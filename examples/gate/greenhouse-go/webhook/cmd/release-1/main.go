// Release 1 of the Greenhouse webhook, with a bug: converting from the hub (v1) to
// v1alpha1 it forgets spec.climate.autoVent, so a greenhouse with automatic vents (true)
// read through v1alpha1 and written back has them off.
package main

import (
	"gate.example.com/greenhouse/convert"
	"gate.example.com/greenhouse/server"
)

func main() {
	server.Main("release-1", convert.Release{ForgetsAutoVent: true}.Conversion())
}
