package dev.corral.core;

/** Marker for every message and persisted state that crosses a node or reaches the journal (jackson-cbor). */
public interface CborSerializable {}
