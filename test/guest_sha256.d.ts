/** Types of guest/sha256.js for the tests. */
export declare function sha256Hex(text: string): string;
