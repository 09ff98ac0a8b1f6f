/* SPDX-License-Identifier: Apache-2.0 */
/* A shared object that is not a program: no pto_program symbol. */
__attribute__((visibility("default"))) int rtplug_nosym_marker = 1;
