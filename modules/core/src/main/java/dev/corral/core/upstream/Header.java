package dev.corral.core.upstream;

import dev.corral.core.CborSerializable;

/** One HTTP header, as a plain name and value so the core needs no HTTP library. */
public record Header(String name, String value) implements CborSerializable {}
