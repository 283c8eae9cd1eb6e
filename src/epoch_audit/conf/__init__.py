"""Configuration profiles (YAML) shipped with the package so wheel installs find them."""
