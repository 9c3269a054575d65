package domain_test

import (
	"errors"
	"strings"
	"testing"

	"tvsm/domain"
)

func TestValidationError(t *testing.T) {
	err := error(&domain.ValidationError{Fields: map[string]string{"stop": "must be after start", "login": "required", "tarif": "required"}})
	if got, want := err.Error(), "login: required; stop: must be after start; tarif: required"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if !errors.Is(err, domain.ErrValidation) || errors.Is(err, domain.ErrNotFound) {
		t.Errorf("errors.Is mismatch for %v", err)
	}
	one := domain.NewValidationError("login", "already taken")
	if one.Error() != "login: already taken" || !errors.Is(one, domain.ErrValidation) {
		t.Errorf("NewValidationError = %v", one)
	}
}

func TestValidateAccountLogin(t *testing.T) {
	for _, ok := range []string{"a", "alice", "user 42", "Зоя", "a@b.c", "12345", strings.Repeat("я", 128)} {
		if err := domain.ValidateAccountLogin(ok); err != nil {
			t.Errorf("ValidateAccountLogin(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", " a", "a ", "\ta", "a\u00a0", "a\nb", "a\x7fb", "\xff", strings.Repeat("я", 129)} {
		if err := domain.ValidateAccountLogin(bad); err == nil {
			t.Errorf("ValidateAccountLogin(%q) succeeded", bad)
		}
	}
}

func TestNormalizePinMD5(t *testing.T) {
	got, err := domain.NormalizePinMD5("D41D8CD98F00B204E9800998ECF8427E")
	if err != nil || got != "d41d8cd98f00b204e9800998ecf8427e" {
		t.Errorf("NormalizePinMD5 = %q, %v", got, err)
	}
	for _, bad := range []string{"", "d41d8cd98f00b204e9800998ecf8427", "d41d8cd98f00b204e9800998ecf8427e0", "z41d8cd98f00b204e9800998ecf8427e", " 41d8cd98f00b204e9800998ecf8427e"} {
		if _, err := domain.NormalizePinMD5(bad); err == nil {
			t.Errorf("NormalizePinMD5(%q) succeeded", bad)
		}
	}
}

func TestValidateHTTPURL(t *testing.T) {
	for _, ok := range []string{"http://a", "https://billing.example:8443/api/v1?x=1", "http://10.0.0.1/"} {
		if err := domain.ValidateHTTPURL(ok); err != nil {
			t.Errorf("ValidateHTTPURL(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", "billing.example", "/api", "ftp://a/", "http://", "https:///path", "http://a b/", "https://x/" + strings.Repeat("p", 2048)} {
		if err := domain.ValidateHTTPURL(bad); err == nil {
			t.Errorf("ValidateHTTPURL(%q) succeeded", bad)
		}
	}
}

func TestStreams(t *testing.T) {
	got := []string{domain.AccountStream(1), domain.ProviderStream(2), domain.TariffStream(3), domain.ChannelStream(4), domain.CategoryStream(5), domain.AdminStream("a")}
	want := []string{"account-1", "provider-2", "tariff-3", "channel-4", "category-5", "admin-a"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("streams %v, want %v", got, want)
	}
}
