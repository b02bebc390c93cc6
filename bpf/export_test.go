package bpf

// Endbr is endbr, for the external tests.
var Endbr = endbr
