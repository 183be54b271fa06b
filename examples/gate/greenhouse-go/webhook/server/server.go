// Package server serves conversion reviews for the Greenhouse types over HTTPS, as a
// controller-runtime manager's webhook server does: each object is decoded into its
// version's Go type, converted through the hub (v1), and encoded again. That encoding is
// where a Go webhook's usual normalisation happens: `omitempty` drops false, 0 and "", and
// ObjectMeta writes `creationTimestamp: null` for an object that has none.
package server

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	v1 "gate.example.com/greenhouse/api/v1"
	"gate.example.com/greenhouse/api/v1alpha1"
)

// Conversion is what a release of the webhook converts with: the spoke (v1alpha1) to the
// hub (v1) and back.
type Conversion struct {
	ToHub   func(src *v1alpha1.Greenhouse, dst *v1.Greenhouse)
	FromHub func(src *v1.Greenhouse, dst *v1alpha1.Greenhouse)
}

// ConversionReview is apiextensions.k8s.io/v1's, the part a webhook reads and writes.
type ConversionReview struct {
	metav1.TypeMeta `json:",inline"`
	Request         *ConversionRequest  `json:"request,omitempty"`
	Response        *ConversionResponse `json:"response,omitempty"`
}

// ConversionRequest is what the API server asks.
type ConversionRequest struct {
	UID               types.UID              `json:"uid"`
	DesiredAPIVersion string                 `json:"desiredAPIVersion"`
	Objects           []runtime.RawExtension `json:"objects"`
}

// ConversionResponse is the webhook's answer.
type ConversionResponse struct {
	UID              types.UID              `json:"uid"`
	ConvertedObjects []runtime.RawExtension `json:"convertedObjects"`
	Result           metav1.Status          `json:"result"`
}

// Main parses the flags and serves until SIGTERM or SIGINT.
func Main(release string, conversion Conversion) {
	certFile := flag.String("tls-cert", "", "the serving certificate (PEM)")
	keyFile := flag.String("tls-key", "", "its private key (PEM)")
	port := flag.Int("port", 9443, "the port to listen on")
	path := flag.String("path", "/convert", "the conversion path")
	flag.Parse()
	if *certFile == "" || *keyFile == "" {
		log.Fatal("--tls-cert and --tls-key are required")
	}
	mux := http.NewServeMux()
	mux.Handle(*path, handler(conversion))
	srv := &http.Server{
		Addr:              fmt.Sprintf("127.0.0.1:%d", *port),
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		TLSConfig:         &tls.Config{MinVersion: tls.VersionTLS12},
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-stop
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}()
	log.Printf("greenhouse webhook %s: serving %s on %s", release, *path, srv.Addr)
	if err := srv.ListenAndServeTLS(*certFile, *keyFile); !errors.Is(err, http.ErrServerClosed) {
		log.Fatal(err)
	}
}

func handler(conversion Conversion) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 32<<20))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		review := ConversionReview{}
		if err := json.Unmarshal(body, &review); err != nil || review.Request == nil {
			http.Error(w, "not a ConversionReview", http.StatusBadRequest)
			return
		}
		response := &ConversionResponse{UID: review.Request.UID}
		response.Result = metav1.Status{Status: metav1.StatusSuccess}
		response.ConvertedObjects = []runtime.RawExtension{}
		for _, object := range review.Request.Objects {
			converted, err := convert(object.Raw, review.Request.DesiredAPIVersion, conversion)
			if err != nil {
				response.ConvertedObjects = nil
				response.Result = metav1.Status{Status: metav1.StatusFailure, Message: err.Error()}
				break
			}
			response.ConvertedObjects = append(response.ConvertedObjects, runtime.RawExtension{Raw: converted})
		}
		out := ConversionReview{TypeMeta: review.TypeMeta, Response: response}
		w.Header().Set("Content-Type", "application/json")
		if err := json.NewEncoder(w).Encode(out); err != nil {
			log.Printf("writing the answer: %v", err)
		}
	}
}

// convert decodes one object into its version's type, goes through the hub, and encodes it
// at the desired version.
func convert(raw []byte, desired string, conversion Conversion) ([]byte, error) {
	meta := metav1.TypeMeta{}
	if err := json.Unmarshal(raw, &meta); err != nil {
		return nil, err
	}
	hub := &v1.Greenhouse{}
	switch meta.APIVersion {
	case v1.APIVersion:
		if err := json.Unmarshal(raw, hub); err != nil {
			return nil, err
		}
	case v1alpha1.APIVersion:
		spoke := &v1alpha1.Greenhouse{}
		if err := json.Unmarshal(raw, spoke); err != nil {
			return nil, err
		}
		conversion.ToHub(spoke, hub)
	default:
		return nil, fmt.Errorf("unsupported apiVersion %q", meta.APIVersion)
	}
	switch desired {
	case v1.APIVersion:
		hub.TypeMeta = metav1.TypeMeta{APIVersion: v1.APIVersion, Kind: meta.Kind}
		return json.Marshal(hub)
	case v1alpha1.APIVersion:
		spoke := &v1alpha1.Greenhouse{}
		conversion.FromHub(hub, spoke)
		spoke.TypeMeta = metav1.TypeMeta{APIVersion: v1alpha1.APIVersion, Kind: meta.Kind}
		return json.Marshal(spoke)
	}
	return nil, fmt.Errorf("unsupported desiredAPIVersion %q", desired)
}
