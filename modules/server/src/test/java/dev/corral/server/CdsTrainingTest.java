package dev.corral.server;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The class data sharing training run (what {@code ./corral} and the container image run once per
 * build to make the archive) gets every answer right: a broken route, repository or cache path
 * fails the run, and with it the archive, rather than leaving a half-trained archive behind.
 */
class CdsTrainingTest {
  @Test
  void everyAnswerOfTheTrainingRunIsRight() throws Exception {
    assertEquals(List.of(), CdsTraining.run());
  }
}
