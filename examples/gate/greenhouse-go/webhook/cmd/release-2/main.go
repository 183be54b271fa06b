// Release 2 of the Greenhouse webhook: release 1's fix. spec.climate.autoVent now goes to
// v1alpha1's spec.autoVent too, and every field makes the round trip.
package main

import (
	"gate.example.com/greenhouse/convert"
	"gate.example.com/greenhouse/server"
)

func main() {
	server.Main("release-2", convert.Release{}.Conversion())
}
